"""The replay's hot path: a minimal HTTP/1.1 client for streamed POSTs, on asyncio protocols.

Why not httpx (or aiohttp) here: a replay consumes hundreds of thousands of SSE chunks per
second, and a general client spends more per HTTP chunk on its own bookkeeping (an object, a
buffer copy, flow control, an async iterator step per read) than agentx spends parsing the
event. This client does one thing: send a POST and hand each socket read's body bytes, with the
``perf_counter_ns`` instant of that read, to a *sink* called synchronously from the protocol's
``data_received``. HTTP framing (status line, headers, chunked encoding, content length) is
parsed by llhttp through ``httptools``; the coroutine that sent the request only wakes when the
headers have arrived and when the body has ended (``scripts/bench_client.py`` measures it).

Scope: HTTP/1.1 over TCP or TLS to one origin, keep-alive connections reused (at most
``max_connections`` at a time, idle ones dropped after ``keepalive_s``), one retry on a fresh
connection when a reused one turns out to have been closed by the server before it answered
(the keep-alive race), no redirects, no proxies, no compression (``accept-encoding:
identity``). Everything else (probing, metrics) uses httpx.

Failures raise the :class:`HTTPTransportError` family; the caller turns them into typed rows.
A sink's exception stops the response and is re-raised to the caller as is.

:mod:`.connection` (one connection and its :class:`Response`), :mod:`.pool`
(:class:`StreamClient`: the pool of keep-alive connections), :mod:`.errors` (the
:class:`HTTPTransportError` family).
"""

from __future__ import annotations

from agentx.replay.http1.connection import HTTPConnection, Response, Sink
from agentx.replay.http1.errors import (
    ConnectError,
    ConnectionClosed,
    ConnectTimeout,
    HTTPTransportError,
    MalformedResponse,
)
from agentx.replay.http1.pool import StreamClient

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "ConnectionClosed",
    "HTTPConnection",
    "HTTPTransportError",
    "MalformedResponse",
    "Response",
    "Sink",
    "StreamClient",
]
