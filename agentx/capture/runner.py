"""``agentx capture``: mitmproxy embedded in-process (private confdir) in front of an agent.

The proxy runs on its own thread with its own event loop; the recorder on another; the main
thread launches the agent, draws the status line and handles signals. With a command, agentx
lives exactly as long as the agent (Ctrl-C goes to the agent, as in ``uv run``; SIGTERM is
forwarded); without one, it runs until SIGINT or SIGTERM. The trace is finalised either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from agentx.capture.addon import CaptureAddon, summary_line
from agentx.capture.recorder import CaptureStats, Recorder
from agentx.errors import AgentxError, CaptureError, UsageError
from agentx.store import TraceWriter

UPSTREAMS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
DEFAULT_PORT = 8780
ADDON_PATH = Path(__file__).with_name("mitmdump_addon.py")
Mode = Literal["reverse", "forward"]


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    out: Path
    mode: Mode = "reverse"
    upstream: str | None = None  # reverse mode: anthropic | openai | URL (default anthropic)
    port: int | None = None  # None: an ephemeral port with a command, DEFAULT_PORT without
    listen_host: str = "127.0.0.1"
    command: tuple[str, ...] = ()
    keep_non_model: bool = True
    identity: bool = True  # ask upstreams for uncompressed responses
    confdir: Path | None = None
    upstream_insecure: bool = False  # do not verify the upstream's certificate
    status: bool | None = None  # live status line; None: when stderr is a terminal
    extra_env: dict[str, str] = field(default_factory=dict)


def listen_port(config: CaptureConfig) -> int:
    if config.port is not None:
        return config.port
    return 0 if config.command else DEFAULT_PORT


def default_confdir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentx" / "mitmproxy"


def resolve_upstream(upstream: str | None) -> str:
    """``anthropic``/``openai``/a URL -> a URL with scheme, host and (maybe) a path prefix."""
    value = (upstream or "anthropic").strip()
    if value in UPSTREAMS:
        return UPSTREAMS[value]
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--upstream {value!r}: expected anthropic, openai or a URL like https://host:port"
        )
    return value.rstrip("/")


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
        if named != "openai":
            env["ANTHROPIC_BASE_URL"] = root
        if named != "anthropic":
            env["OPENAI_BASE_URL"] = v1
            env["OPENAI_API_BASE"] = v1  # litellm / aider / older SDKs
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
    tmp.replace(out)
    return out


class _ForwardLog(logging.Handler):
    """mitmproxy's and agentx's warnings, to a callback (and kept, for start-up errors)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink
        self.errors: list[str] = []
        self.starting = True  # start-up errors become the CaptureError, not extra lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if record.levelno >= logging.ERROR:
                self.errors.append(msg)
            if not self.starting:
                self.sink(msg)
        except Exception:
            pass


class ProxyThread:
    """An embedded mitmproxy with the agentx addon, on its own thread and event loop."""

    def __init__(self, config: CaptureConfig, addon: CaptureAddon, confdir: Path) -> None:
        self.config = config
        self.addon = addon
        self.confdir = confdir
        self.port: int | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._master: Any = None
        self._error: BaseException | None = None

    def _mode(self) -> str:
        if self.config.mode == "reverse":
            parts = urlsplit(resolve_upstream(self.config.upstream))
            return f"reverse:{parts.scheme}://{parts.netloc}"
        return "regular"

    def start(self, timeout: float = 30.0) -> None:
        self._thread = threading.Thread(target=self._main, name="agentx-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise CaptureError("the capture proxy did not start within 30 s")
        if self._error is not None:
            raise CaptureError(f"the capture proxy could not start: {self._error}")

    def _main(self) -> None:
        try:
            asyncio.run(self._amain())
        except BaseException as exc:  # SystemExit from a mitmproxy addon included
            self._error = self._error or exc
        finally:
            self._ready.set()

    async def _amain(self) -> None:
        from mitmproxy import addons as mitm_addons
        from mitmproxy import options as mitm_options
        from mitmproxy.master import Master

        cfg = self.config
        opts = mitm_options.Options()
        master = Master(opts)
        master.addons.add(*mitm_addons.default_addons())  # type: ignore[no-untyped-call]
        master.addons.add(self.addon)  # type: ignore[no-untyped-call]
        master.addons.add(_Ready(self))  # type: ignore[no-untyped-call]
        opts.update(  # type: ignore[no-untyped-call]
            confdir=str(self.confdir),
            listen_host=cfg.listen_host,
            listen_port=listen_port(cfg),
            mode=[self._mode()],
            ssl_insecure=cfg.upstream_insecure,
            connection_strategy="lazy",
        )
        self._master = master
        await master.run()

    def _on_running(self) -> None:
        ps = self._master.addons.get("proxyserver") if self._master else None
        addrs = ps.listen_addrs() if ps is not None else []
        if not addrs:
            self._error = RuntimeError("no listening socket (is the port in use?)")
            self._master.shutdown()
        else:
            self.port = int(addrs[0][1])
        self._ready.set()

    def stop(self, timeout: float = 30.0) -> None:
        if self._master is not None and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # its loop may have closed meanwhile
                self._master.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)


class _Ready:
    def __init__(self, proxy: ProxyThread) -> None:
        self.proxy = proxy

    def running(self) -> None:
        self.proxy._on_running()


@dataclass(frozen=True, slots=True)
class CaptureResult:
    stats: CaptureStats
    out: Path
    exit_code: int  # the agent's, or 0 without a command


class Capture:
    """Proxy + recorder + trace, as one object: ``with Capture(cfg) as cap: ... cap.url``.

    Used by :func:`run_capture`, the tests and the benchmark.
    """

    def __init__(
        self, config: CaptureConfig, *, report: Callable[[str], None] | None = None
    ) -> None:
        self.config = config
        self.report = report or (lambda msg: print(msg, file=sys.stderr))
        self.confdir = Path(config.confdir) if config.confdir else default_confdir()
        self.recorder: Recorder | None = None
        self.proxy: ProxyThread | None = None
        self._log: _ForwardLog | None = None
        self._stats: CaptureStats | None = None

    @property
    def url(self) -> str:
        assert self.proxy is not None and self.proxy.port is not None
        host = self.config.listen_host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.proxy.port}"

    def start(self) -> Capture:
        cfg = self.config
        if cfg.mode not in ("reverse", "forward"):
            raise UsageError(f"--mode {cfg.mode!r}: expected reverse or forward")
        if cfg.mode == "forward" and cfg.upstream:
            raise UsageError(
                "--upstream is for --mode reverse; in forward mode the agent picks its host"
            )
        if cfg.mode == "reverse":
            resolve_upstream(cfg.upstream)
        try:
            self.confdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise CaptureError(f"cannot create {self.confdir}: {exc.strerror or exc}") from None
        try:
            writer = TraceWriter(
                cfg.out, metadata={"capture": cfg.mode, "upstream": cfg.upstream or ""}
            )
        except AgentxError as exc:
            raise CaptureError(str(exc)) from None
        self.recorder = Recorder(writer, keep_non_model=cfg.keep_non_model, reporter=self.report)
        self.recorder.start()
        self._log = _ForwardLog(self.report)
        for name in ("mitmproxy", "agentx.capture"):
            logging.getLogger(name).addHandler(self._log)
        self.proxy = ProxyThread(
            cfg, CaptureAddon(self.recorder, identity=cfg.identity), self.confdir
        )
        try:
            self.proxy.start()
        except CaptureError as exc:
            errors = self._log.errors
            self.close()
            where = f"{cfg.listen_host}:{listen_port(cfg)}"
            if any("address already in use" in e.lower() for e in errors):
                raise CaptureError(
                    f"the capture proxy could not start: {where} is already in use (choose another --port)"
                ) from None
            if errors:
                first = errors[-1].splitlines()[0]
                raise CaptureError(
                    f"the capture proxy could not start on {where}: {first}"
                ) from None
            raise exc from None
        self._log.starting = False
        return self

    def close(self) -> CaptureStats:
        if self._stats is not None:
            return self._stats
        if self.proxy is not None:
            self.proxy.stop()
        stats = self.recorder.close() if self.recorder is not None else CaptureStats()
        if self._log is not None:
            for name in ("mitmproxy", "agentx.capture"):
                logging.getLogger(name).removeHandler(self._log)
        self._stats = stats
        return stats

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _status_text(cap: Capture, started: float) -> str:
    assert cap.recorder is not None
    s = cap.recorder.stats()
    up = resolve_upstream(cap.config.upstream) if cap.config.mode == "reverse" else "forward proxy"
    elapsed = int(time.monotonic() - started)
    line = (
        f"agentx capture {cap.url} → {up} · {s.requests} requests"
        f"{f' ({s.partial} partial)' if s.partial else ''}"
        f" · {s.prompt_tokens:,} in / {s.completion_tokens:,} out tokens"
        f" · {s.sessions} sessions · {s.threads} threads · {elapsed // 60}:{elapsed % 60:02d}"
    )
    if s.write_error:
        line += " · NOT RECORDING"
    return line


@contextlib.contextmanager
def _signals(handlers: dict[int, Callable[[int, Any], None]]) -> Iterator[None]:
    old = {sig: signal.signal(sig, h) for sig, h in handlers.items()}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def run_capture(
    config: CaptureConfig,
    *,
    console: Any = None,
    on_ready: Callable[[Capture], None] | None = None,
) -> CaptureResult:
    """Run ``agentx capture`` until the agent exits (or SIGINT/SIGTERM without one)."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    con = console or Console(stderr=True, highlight=False)

    def report(msg: str) -> None:
        con.print(Text(msg, style="bold red" if "NOT RECORDING" in msg else "yellow"))

    cmd = list(config.command)
    if cmd and shutil.which(cmd[0]) is None and not Path(cmd[0]).exists():
        raise CaptureError(f"cannot run {cmd[0]!r}: command not found")
    cap = Capture(config, report=report)
    cap.start()
    started = time.monotonic()
    stop = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def on_term(signum: int, _frame: Any) -> None:
        if child is not None and child.poll() is None:
            child.send_signal(signum)
        else:
            stop.set()

    def on_int(signum: int, _frame: Any) -> None:
        if child is not None and child.poll() is None:
            if not sys.stdin.isatty():  # no terminal delivered it to the agent: forward it
                child.send_signal(signum)
        else:
            stop.set()

    upstream = (
        resolve_upstream(config.upstream) if config.mode == "reverse" else "(agent's own hosts)"
    )
    con.print(
        Text(
            f"agentx capture: listening on {cap.url} ({config.mode}) → {upstream}; writing {config.out}"
        )
    )
    if config.mode == "forward":
        con.print(Text(f"agentx capture: CA certificate {cap.confdir / 'mitmproxy-ca-cert.pem'}"))
    exit_code = 0
    show_status = config.status if config.status is not None else con.is_terminal
    try:
        with _signals({signal.SIGINT: on_int, signal.SIGTERM: on_term}):
            if on_ready is not None:
                on_ready(cap)
            if cmd:
                env = agent_env(config, cap.url, cap.confdir)
                try:
                    child = subprocess.Popen(cmd, env=env)
                except OSError as exc:
                    raise CaptureError(f"cannot run {cmd[0]!r}: {exc.strerror or exc}") from None
                assert cap.recorder is not None
                cap.recorder.agent_pid = child.pid
            live = (
                Live(Text(""), console=con, transient=True, auto_refresh=False)
                if show_status
                else None
            )
            with live if live is not None else contextlib.nullcontext():
                while not stop.is_set():
                    if child is not None and child.poll() is not None:
                        break
                    if live is not None:
                        live.update(Text(_status_text(cap, started), style="dim"), refresh=True)
                    stop.wait(0.5)
            if child is not None:
                if child.poll() is None:
                    child.terminate()
                    try:
                        child.wait(5)
                    except subprocess.TimeoutExpired:
                        child.kill()
                        child.wait()
                rc = child.returncode
                exit_code = rc if rc >= 0 else 128 - rc
    finally:
        stats = cap.close()
    con.print(Text(f"agentx capture: {summary_line(stats)} → {config.out}"))
    return CaptureResult(stats=stats, out=Path(config.out), exit_code=exit_code)
