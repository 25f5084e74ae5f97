"""What ``agentx capture`` is asked to do: the options, and where the proxy listens and sends."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from agentx.errors import UsageError

UPSTREAMS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
DEFAULT_PORT = 8780
Mode = Literal["reverse", "forward"]


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    out: Path
    mode: Mode = "reverse"
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
    prefix."""
    value = (upstream or "anthropic").strip()
    if value in UPSTREAMS:
        return UPSTREAMS[value]
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--upstream {value!r}: expected anthropic, openai, gemini or a URL like https://host:port"
        )
    return value.rstrip("/")
