"""The session identity a server-side router reads, both ways: the headers ``replay`` sends
(``--session-header``) and the ones serve-sim's built-in router honours.

Presets, by the router that reads them:

- ``vllm-router``: ``X-Session-ID`` (its consistent-hash policy's key);
- ``dynamo``: ``X-Dynamo-Session-ID``, one id per reasoning chain, and
  ``X-Dynamo-Parent-Session-ID`` on a subagent's requests naming its parent's;
- ``smg``: ``X-SMG-Routing-Key`` (SGLang Model Gateway);
- ``llm-d``: ``x-session-token``, which the router sets on its response and the client sends
  back on the session's next requests (the first one goes without);
- any other header name: that header, carrying the tree's id.

Every preset but ``dynamo`` names the tree (a session copy) on every request of it, its
subagents' included; ``dynamo`` names a subagent's own chain (``TREE:THREAD``) and its parent.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from agentx.core.options import Panel, flag


class SessionPreset(StrEnum):
    """``--session-header``'s presets."""

    VLLM_ROUTER = "vllm-router"
    DYNAMO = "dynamo"
    SMG = "smg"
    LLM_D = "llm-d"


X_SESSION_ID = "x-session-id"
DYNAMO_SESSION = "x-dynamo-session-id"
DYNAMO_PARENT = "x-dynamo-parent-session-id"
SMG_ROUTING_KEY = "x-smg-routing-key"
LLM_D_TOKEN = "x-session-token"

_NAMES = {
    SessionPreset.VLLM_ROUTER: X_SESSION_ID,
    SessionPreset.DYNAMO: DYNAMO_SESSION,
    SessionPreset.SMG: SMG_ROUTING_KEY,
    SessionPreset.LLM_D: LLM_D_TOKEN,
}
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110)


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """Where a request carries its session: ``name`` (lower case), ``parent`` (a subagent's
    parent, Dynamo's), ``echo``: the value is the token the server answered with (llm-d)."""

    name: str
    preset: SessionPreset | None = None  # None: a custom header
    parent: str | None = None
    echo: bool = False

    def __str__(self) -> str:
        return str(self.preset) if self.preset is not None else self.name

    def headers(
        self, tree: str, thread: str | None = None, token: str | None = None
    ) -> dict[str, str]:
        """The headers of one request of ``tree`` (``thread``: a subagent's thread, ``None``
        for the tree's main thread; ``token``: what the server answered last, llm-d)."""
        if self.echo:
            return {self.name: token} if token else {}
        if self.parent is not None and thread is not None:
            return {self.name: f"{tree}:{thread}", self.parent: tree}
        return {self.name: tree}


def session_header(typed: object) -> SessionHeader | None:
    """``--session-header PRESET|NAME`` -> the header (``None``: not given). Raises
    ``ValueError`` for a name that is no HTTP header name."""
    if typed is None or isinstance(typed, SessionHeader):
        return typed
    word = str(typed).strip()
    try:
        preset = SessionPreset(word.lower())
    except ValueError:
        if not _HEADER_NAME.match(word):
            raise ValueError(
                f"{word[:40]!r} is neither a preset ({', '.join(SessionPreset)}) nor a header name"
            ) from None
        return SessionHeader(word.lower())
    return SessionHeader(
        _NAMES[preset],
        preset,
        parent=DYNAMO_PARENT if preset is SessionPreset.DYNAMO else None,
        echo=preset is SessionPreset.LLM_D,
    )


SESSION_HEADER = flag(
    "--session-header",
    metavar="PRESET|NAME",
    parse=session_header,
    panel=Panel.SERVER,
    help="send each request's session for a server-side router: vllm-router (X-Session-ID), "
    "dynamo (X-Dynamo-Session-ID, and the parent's on a subagent's), smg (X-SMG-Routing-Key), "
    "llm-d (x-session-token, echoed back from the response) or a header NAME carrying the tree",
)


# -- the server side: serve-sim's router --------------------------------------------------------


def routing_key(headers: Mapping[str, str]) -> str:
    """The tree a request names for a router, from any preset's headers (a subagent's
    parent first, so it follows its tree); ``""`` when it names none. ``headers``: a
    case-insensitive mapping (aiohttp's), or one with lower-case names."""
    for name in (DYNAMO_PARENT, DYNAMO_SESSION, X_SESSION_ID, SMG_ROUTING_KEY):
        value = headers.get(name)
        if value:
            return value
    return ""


def replica_token(replica: int) -> str:
    """The ``x-session-token`` a router answers with: the replica that served, opaque (as
    llm-d's, which encodes its pod's name)."""
    return base64.urlsafe_b64encode(f"agentx-replica-{replica}".encode()).decode()


def token_replica(token: str, replicas: int) -> int | None:
    """The replica a token sent back names, ``None`` when it names none of ``replicas``."""
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    head, _, index = text.rpartition("-")
    if head != "agentx-replica" or not index.isdigit():
        return None
    replica = int(index)
    return replica if replica < replicas else None
