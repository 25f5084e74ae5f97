"""serve-sim against a flood: every connection goes through a :class:`Guard`, which bounds how
many are open, how long a request head and a request body may take to arrive, and says each
condition once in the log instead of once per connection (or a traceback per ``accept`` when
file descriptors run out).

:meth:`Guard.protocol` wraps aiohttp's protocol for one connection (a plain forwarding
:class:`asyncio.Protocol`: aiohttp's parsing is untouched); the middleware
:meth:`Guard.connections` tells the guard when a request's head has been parsed and when its
answer is done, and :meth:`Guard.bodies` reads the body under the body timeout. Idle keep-alive connections between requests are aiohttp's own
business (its keep-alive timeout): the head timer runs from the connection's start, and from the
first byte of each later request, until that request's head is parsed.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Awaitable, Callable
from typing import Any, cast

from aiohttp import web

log = logging.getLogger("agentx.serve_sim")

FD_RESERVE = 64  # descriptors kept free of connections: the listener, logs, the tokenizer
_ACCEPT_TROUBLE = "socket.accept() out of system resource"  # asyncio's words at EMFILE


def connection_cap(max_connections: int) -> int:
    """``max_connections``, lowered to what the process's descriptor limit leaves room for."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - FD_RESERVE))


class Guard:
    """The limits of one server, and the conditions it has already logged."""

    def __init__(self, *, max_connections: int, header_timeout_s: float, body_timeout_s: float):
        self.max_connections = connection_cap(max_connections)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.open = 0
        self.said: set[str] = set()
        self._by_transport: dict[asyncio.BaseTransport, _Guarded] = {}

    def once(self, condition: str, message: str) -> None:
        """Log ``message`` the first time ``condition`` happens; never again."""
        if condition not in self.said:
            self.said.add(condition)
            log.warning("serve-sim: %s (said once)", message)

    def protocol(self, inner: asyncio.Protocol) -> asyncio.Protocol:
        return _Guarded(self, inner)

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's handler: out of descriptors at ``accept`` is one line, not a traceback a
        second; anything else goes to the default handler."""
        if context.get("message") == _ACCEPT_TROUBLE:
            exc = context.get("exception")
            why = getattr(exc, "strerror", None) or exc
            self.once("accept", f"cannot accept connections: {why}; retrying every second")
            return
        loop.default_exception_handler(context)

    @web.middleware
    async def connections(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """Outermost: the head has arrived (its timer stops) and, once answered, the
        connection may wait for the next one; a body that timed out closes it."""
        conn = self._by_transport.get(request.transport) if request.transport else None
        if conn is not None:
            conn.head_arrived()
        try:
            response = await handler(request)
            if request.get(_BODY_LATE):
                response.force_close()  # the rest of a trickled body is not waited for
            return response
        finally:
            if conn is not None:
                conn.answered()

    @web.middleware
    async def bodies(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """Innermost: the body is read under the body timeout (aiohttp keeps it, so the
        handler reads it again for free); too late is a 408."""
        try:
            async with asyncio.timeout(self.body_timeout_s):
                await request.read()
        except TimeoutError:
            self.once("body", f"a request body took longer than {self.body_timeout_s:g} s")
            request[_BODY_LATE] = True
            raise web.HTTPRequestTimeout(
                text=f"request body not received within {self.body_timeout_s:g} s"
            ) from None
        return await handler(request)


_BODY_LATE = web.RequestKey("agentx_body_late", bool)


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol for one connection, behind the guard's limits."""

    def __init__(self, guard: Guard, inner: asyncio.Protocol) -> None:
        self.guard, self.inner = guard, inner
        self.transport: asyncio.Transport | None = None
        self.in_request = False
        self.refused = False
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        g = self.guard
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        if g.open >= g.max_connections:
            self.refused = True
            g.once("limit", f"{g.max_connections} connections open: refusing more")
            self.transport.abort()
            return
        g.open += 1
        g._by_transport[transport] = self
        self._arm()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if not self.in_request and self._timer is None:
            self._arm()  # the first byte of the next request: its head has the time it may
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return None if self.refused else self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            return
        self._disarm()
        g = self.guard
        g.open -= 1
        if self.transport is not None:
            g._by_transport.pop(self.transport, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def head_arrived(self) -> None:
        self.in_request = True
        self._disarm()

    def answered(self) -> None:
        self.in_request = False

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.guard.header_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        if self.in_request or self.transport is None:
            return
        g = self.guard
        g.once("header", f"a request head took longer than {g.header_timeout_s:g} s: closed")
        self.transport.abort()
