"""One HTTP/1.1 connection on an asyncio protocol (:class:`HTTPConnection`), one exchange at a
time, and the :class:`Response` it gives: each socket read's body bytes, with the
``perf_counter_ns`` instant of that read, handed to a *sink* from ``data_received``; framing
parsed by llhttp through ``httptools``. A sink's exception stops the response and is re-raised
to the caller as is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import cast

import httptools

from agentx.replay.http1.errors import ConnectionClosed, MalformedResponse

Sink = Callable[[bytes, int], None]  # (body bytes of one read, perf_counter_ns of that read)

MAX_HEAD_BYTES = 1 << 20  # a status line and headers longer than this are not an answer


class HTTPConnection(asyncio.Protocol):
    """One HTTP/1.1 connection, one exchange at a time. It is also llhttp's callback target:
    per-exchange state lives here and is reset by :meth:`begin`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.lost: BaseException | None = None
        self.idle_since = 0.0
        self.reused = False
        self._pieces: list[bytes] = []
        self.on_body = self._pieces.append  # llhttp calls this for every body piece
        self._http = httptools.HttpResponseParser(self)  # binds the callbacks: after on_body
        self._loop = asyncio.get_running_loop()
        self._reset()

    def _reset(self) -> None:
        self.active = False
        self.received = 0  # bytes of this exchange's response
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.headers_ns = 0
        self.body_until_eof = False
        self.complete = False
        self.keep_alive = False  # as llhttp judged it when the message completed
        self.error: BaseException | None = None
        self.end_ns = 0
        self._t_ns = 0
        self._sink: Sink | None = None
        self._pending: list[tuple[bytes, int]] = []  # body read before a sink was attached
        self._head: asyncio.Future[None] | None = None
        self._done: asyncio.Future[None] | None = None
        self._field = b""

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        if not self.active:  # bytes nobody asked for: the connection is unusable
            self.abort()
            return
        self._t_ns = t = time.perf_counter_ns()
        self.received += len(data)
        try:
            self._http.feed_data(data)
        except httptools.HttpParserError as exc:
            if not self.complete:
                self._fail(MalformedResponse(f"malformed HTTP response: {exc}"))
                return
            # a second answer after the complete one (on_message_begin stopped llhttp at its
            # first byte): the answer stands, the connection is nobody's any more
            self.keep_alive = False
        pieces = self._pieces
        if pieces:
            body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            pieces.clear()
            sink = self._sink
            if sink is None:
                self._pending.append((body, t))
            else:
                try:
                    sink(body, t)
                except Exception as exc:  # the sink's verdict on the body ends the exchange
                    self._fail(exc)
                    return
        if self.complete:
            self._finish()
        elif self.status == 0 and self.received > MAX_HEAD_BYTES:
            self._fail(MalformedResponse("no complete HTTP response head in the first MiB"))

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc
        if not self.active or self.complete or self.error is not None:
            return
        if self.body_until_eof and self.status:
            self.end_ns = self._t_ns or time.perf_counter_ns()
            self.complete = True
            self._finish(keep=False)
            return
        detail = f": {exc}" if exc else ""
        if self.status:
            self._fail(ConnectionClosed(f"connection closed before the response ended{detail}"))
        else:
            self._fail(ConnectionClosed(f"connection closed before the response{detail}"))

    # -- llhttp callbacks (on_body is the list's append) --------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # an unsolicited answer (a 500 after the 200): never read as ours
            raise MalformedResponse("a second response to one request")
        self.headers = {}

    def on_status(self, status: bytes) -> None:
        self.reason = status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._http.get_status_code()
        if status < 200:  # 1xx: an interim response, the real one follows
            return
        self.status = status
        self.headers_ns = self._t_ns
        h = self.headers
        chunked = "chunked" in h.get("transfer-encoding", "").lower()
        self.body_until_eof = not chunked and "content-length" not in h and status not in (204, 304)
        if self._head is not None and not self._head.done():
            self._head.set_result(None)

    def on_message_complete(self) -> None:
        if self.status:  # not an interim 1xx response
            self.complete = True
            self.keep_alive = self._http.should_keep_alive()  # its flags reset after this
            self.end_ns = self._t_ns

    # -- the exchange, driven by StreamClient and Response -------------------------------------

    def begin(self, request: bytes, body: bytes) -> asyncio.Future[None]:
        """Send a request; the returned future resolves when the response head has arrived."""
        self._reset()
        self.active = True
        self._head = self._loop.create_future()
        self._done = self._loop.create_future()
        assert self.transport is not None
        self.transport.write(request)
        if body:
            self.transport.write(body)
        return self._head

    def attach(self, sink: Sink) -> asyncio.Future[None]:
        """Hand the body (what already arrived, then each read) to ``sink``; the future
        resolves when the body has ended."""
        assert self._done is not None
        pending, self._pending = self._pending, []
        self._sink = sink
        try:
            for body, t in pending:
                sink(body, t)
        except Exception as exc:
            self._fail(exc)
        return self._done

    def _finish(self, keep: bool = True) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(None)
        if not (keep and self.keep_alive):
            self.abort()

    def _fail(self, exc: BaseException) -> None:
        self.error = exc
        for fut in (self._head, self._done):
            if fut is not None and not fut.done():
                fut.set_exception(exc)
                fut.exception()  # retrieved: the caller may be waiting on the other one only
        self.abort()

    def reusable(self, now: float, keepalive_s: float) -> bool:
        return (
            not self.closed
            and self.complete
            and self.error is None
            and self.keep_alive
            and now - self.idle_since < keepalive_s
        )

    def release(self) -> None:
        self.active = False
        self._sink = None
        self.idle_since = time.monotonic()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Response:
    """A response whose head has arrived. Consume it with :meth:`stream` or :meth:`read`."""

    __slots__ = ("_conn",)

    def __init__(self, conn: HTTPConnection) -> None:
        self._conn = conn

    @property
    def status(self) -> int:
        return self._conn.status

    @property
    def reason(self) -> str:
        return self._conn.reason

    @property
    def headers(self) -> Mapping[str, str]:
        """Lower-cased names (a repeated header keeps its last value)."""
        return self._conn.headers

    @property
    def headers_ns(self) -> int:
        """``perf_counter_ns`` of the read that completed the head."""
        return self._conn.headers_ns

    async def stream(self, sink: Sink) -> int:
        """Feed the body to ``sink`` read by read; returns the instant of the last read."""
        conn = self._conn
        await conn.attach(sink)
        if conn.error is not None:  # the sink refused what had arrived before it was attached
            raise conn.error
        return conn.end_ns

    async def read(self, limit: int | None = None) -> bytes:
        """The body (at most about ``limit`` bytes: the rest is not waited for)."""
        parts: list[bytes] = []
        size = 0
        enough: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def collect(data: bytes, _t: int) -> None:
            nonlocal size
            parts.append(data)
            size += len(data)
            if limit is not None and size >= limit and not enough.done():
                enough.set_result(None)

        done = self._conn.attach(collect)
        if limit is not None and not done.done():
            await asyncio.wait((done, enough), return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            done.result()
        data = b"".join(parts)
        return data if limit is None else data[:limit]
