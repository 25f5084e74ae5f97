"""What ``agentx capture`` is asked to do: the options, and where the proxy listens and sends."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from agentx.core.errors import UsageError
from agentx.core.urls import check_http_url, has_credentials, redact_url

UPSTREAMS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
DEFAULT_PORT = 8780


class Mode(StrEnum):
    """``--mode``: how the agent reaches the proxy."""

    REVERSE = "reverse"  # the agent talks plain HTTP to agentx, which forwards upstream
    FORWARD = "forward"  # an HTTPS proxy the agent trusts through agentx's CA


def capture_mode(value: object) -> Mode:
    """``"forward"`` -> :attr:`Mode.FORWARD`, or the usage error."""
    try:
        return Mode(str(value))
    except ValueError:
        raise UsageError(f"--mode {value!r}: expected reverse or forward") from None


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    out: Path
    mode: Mode = Mode.REVERSE
    upstream: str | None = (
        None  # reverse mode: anthropic | openai | gemini | URL (default anthropic)
    )
    port: int | None = None  # None: an ephemeral port with a command, DEFAULT_PORT without
    listen_host: str = "127.0.0.1"
    command: tuple[str, ...] = ()
    keep_non_model: bool = True
    identity: bool = True  # ask upstreams for uncompressed responses
    confdir: Path | None = None
    upstream_insecure: bool = False  # do not verify the upstream's certificate
    status: bool | None = None  # live status line; None: when stderr is a terminal
    force: bool = False  # replace an existing trace (once the new one is complete)
    end_leftovers: bool = False  # end the processes the agent left running when it exited
    extra_env: dict[str, str] = field(default_factory=dict)


def listen_port(config: CaptureConfig) -> int:
    if config.port is not None:
        return config.port
    return 0 if config.command else DEFAULT_PORT


def default_confdir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentx" / "mitmproxy"


def resolve_upstream(upstream: str | None) -> str:
    """``anthropic``/``openai``/``gemini``/a URL -> a URL with scheme, host and (maybe) a path
    prefix.

    Credentials in the URL (``user:pass@``, ``?key=``) are dropped: the agent sends its own
    with each request, and a URL is stored and printed without them (:mod:`agentx.core.urls`)."""
    value = (upstream or "anthropic").strip()
    if value in UPSTREAMS:
        return UPSTREAMS[value]
    try:
        check_http_url(value, "--upstream")
    except UsageError:
        raise UsageError(
            f"--upstream {redact_url(value)!r}: expected anthropic, openai, gemini or a URL "
            "like https://host:port"
        ) from None
    parts = urlsplit(value)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")


def upstream_credentials_warning(upstream: str | None) -> str | None:
    """What to tell the user who put credentials in ``--upstream``."""
    if upstream is None or not has_credentials(upstream.strip()):
        return None
    return (
        f"agentx capture: the credentials in --upstream {redact_url(upstream.strip())} are "
        "neither forwarded (the agent sends its own) nor stored"
    )


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(config: CaptureConfig, port: int | None) -> str | None:
    """What to tell the user whose proxy listens beyond this machine (``--host``)."""
    host = config.listen_host
    if is_loopback(host):
        return None
    where = "all interfaces" if host in ("", "0.0.0.0", "::") else host
    reach = "to any host" if config.mode == "forward" else "to the upstream"
    return (
        f"agentx capture: warning: listening on {where} (port {port}): anyone who can reach "
        f"this machine can send requests through the proxy {reach}, and they are recorded; "
        "use --host 127.0.0.1 unless you need that"
    )
