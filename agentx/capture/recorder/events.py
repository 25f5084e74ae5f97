"""What the mitmproxy addon hands the recorder: one small value per proxy hook.

Built on the proxy's event loop (the hot path: one :class:`ResponseData` per response chunk),
consumed on the recorder's thread. ``*_ns`` are ``time.monotonic_ns()``; ``wall_ns`` is
``time.time_ns()``. ``key`` is mitmproxy's flow id: it ties the events of one exchange together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestSent:
    """``request``: the whole request, once its body has been read."""

    key: str
    start_ns: int
    wall_ns: int
    method: str
    path: str
    headers: Sequence[tuple[bytes | str, bytes | str]]  # as sent, repeated names kept
    raw_body: bytes
    peer: tuple[str, int] | None  # the client's address
    conn_id: str  # the client connection (one process owns it)
    host: str | None = None  # where the proxy sent it: host, or host:port off the default


@dataclass(frozen=True, slots=True)
class ResponseHeaders:
    """``responseheaders``: the status and how the body is encoded."""

    key: str
    t_ns: int
    status: int
    content_type: str | None
    content_encoding: str | None


@dataclass(frozen=True, slots=True)
class ResponseData:
    """One chunk of the response body, as it arrived."""

    key: str
    t_ns: int
    chunk: bytes


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    """``response``: the body is complete (``t_ns``: its last byte)."""

    key: str
    t_ns: int


@dataclass(frozen=True, slots=True)
class FlowError:
    """``error``: the exchange broke off (connection reset, upstream unreachable, ...)."""

    key: str
    t_ns: int
    message: str


@dataclass(frozen=True, slots=True)
class WebSocketMessage:
    """``websocket_message``: one whole message of a WebSocket whose upgrade request was
    ``path`` with ``headers`` (the Responses API over WebSocket: ``response.create`` from the
    client, the streamed events from the server)."""

    key: str  # the WebSocket's flow id
    t_ns: int
    wall_ns: int
    from_client: bool
    data: bytes
    path: str
    headers: Sequence[tuple[bytes | str, bytes | str]]
    peer: tuple[str, int] | None
    conn_id: str
    host: str | None = None


@dataclass(frozen=True, slots=True)
class WebSocketEnd:
    """``websocket_end``: the WebSocket closed (a response still streaming is cut)."""

    key: str
    t_ns: int
    message: str


Event = (
    RequestSent
    | ResponseHeaders
    | ResponseData
    | ResponseEnd
    | FlowError
    | WebSocketMessage
    | WebSocketEnd
)
