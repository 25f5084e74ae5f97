"""The agent ``agentx capture -- CMD ...`` launches: its environment, and its process.

Reverse mode points the agent's base URLs at the proxy; forward mode sets the proxy variables
and agentx's CA (alone for Node, combined with the system's bundle for everything else).
"""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from agentx.capture.runner.config import UPSTREAMS, CaptureConfig, resolve_upstream
from agentx.core.errors import CaptureError
from agentx.core.procs import dies_with_this_process


def agent_env(
    config: CaptureConfig, proxy_url: str, confdir: Path, base: dict[str, str] | None = None
) -> dict[str, str]:
    """The agent's environment: base URLs (reverse) or proxy and CA variables (forward)."""
    env = dict(os.environ if base is None else base)
    env["AGENTX_CAPTURE_URL"] = proxy_url
    if config.mode == "reverse":
        upstream = resolve_upstream(config.upstream)
        prefix = urlsplit(upstream).path.rstrip("/")
        root = proxy_url + prefix
        v1 = root if root.endswith("/v1") else root + "/v1"
        named = (config.upstream or "anthropic").strip()
        url = named not in UPSTREAMS  # a URL upstream may speak any API: point every client
        if named == "anthropic" or url:
            env["ANTHROPIC_BASE_URL"] = root
        if named == "openai" or url:
            env["OPENAI_BASE_URL"] = v1
            env["OPENAI_API_BASE"] = v1  # litellm / aider / older SDKs
        if named == "gemini" or url:
            # @google/genai and gemini-cli (which then authenticates as a "gateway")
            env["GOOGLE_GEMINI_BASE_URL"] = root
        no_proxy = [p for p in env.get("NO_PROXY", env.get("no_proxy", "")).split(",") if p]
        for host in ("127.0.0.1", "localhost"):
            if host not in no_proxy:
                no_proxy.append(host)
        env["NO_PROXY"] = env["no_proxy"] = ",".join(no_proxy)
    else:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"):
            env[name] = proxy_url
        env.pop("NO_PROXY", None)
        env.pop("no_proxy", None)
        ca = confdir / "mitmproxy-ca-cert.pem"
        bundle = combined_bundle(confdir)
        env["NODE_EXTRA_CA_CERTS"] = str(ca)
        env["NODE_USE_ENV_PROXY"] = "1"
        for name in (
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "CODEX_CA_CERTIFICATE",
        ):
            env[name] = str(bundle)
    env.update(config.extra_env)
    return env


def system_ca_file() -> Path | None:
    paths = ssl.get_default_verify_paths()
    for cand in (os.environ.get("SSL_CERT_FILE"), paths.cafile, paths.openssl_cafile):
        if cand and Path(cand).is_file():
            return Path(cand)
    try:
        import certifi

        return Path(certifi.where())
    except ImportError:
        return None


def combined_bundle(confdir: Path) -> Path:
    """The system's CA bundle plus agentx's CA, for clients that take one bundle file."""
    ca = (confdir / "mitmproxy-ca-cert.pem").read_bytes()
    system = system_ca_file()
    out = confdir / "agentx-ca-bundle.pem"
    data = (system.read_bytes() if system else b"").rstrip(b"\n") + b"\n" + ca
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o644)  # a CA bundle the agent trusts: nobody else may write it
    tmp.replace(out)
    return out


class AgentProcess:
    """The launched agent: started with the capture's environment, stopped when it ends."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self.proc: subprocess.Popen[bytes] | None = None

    def check(self) -> None:
        """Fail before the proxy starts when the command does not exist."""
        name = self.command[0]
        if shutil.which(name) is None and not Path(name).exists():
            raise CaptureError(f"cannot run {name!r}: command not found")

    def start(self, env: dict[str, str]) -> int:
        """Launch it; its pid."""
        try:
            # a SIGKILLed capture leaves no agent running on: it gets SIGTERM (Linux)
            self.proc = subprocess.Popen(
                self.command, env=env, preexec_fn=dies_with_this_process(signal.SIGTERM)
            )
        except OSError as exc:
            raise CaptureError(f"cannot run {self.command[0]!r}: {exc.strerror or exc}") from None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def send_signal(self, signum: int) -> None:
        if self.proc is not None:
            self.proc.send_signal(signum)

    def stop(self, grace_s: float = 5.0) -> int:
        """Terminate it if it still runs (kill after ``grace_s``); its exit code, shell style
        (``128 + N`` for a death by signal N)."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        rc = proc.returncode
        return rc if rc >= 0 else 128 - rc
