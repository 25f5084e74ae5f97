"""``StreamClient``: POSTs to one origin on a pool of keep-alive HTTP/1.1 connections (at most
``max_connections`` at a time, idle ones dropped after ``keepalive_s``), with one retry on a
fresh connection when a reused one was closed by the server before it answered (the keep-alive
race).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from urllib.parse import urlencode, urlsplit

from agentx.core.urls import credential_values
from agentx.replay.http1.connection import HTTPConnection, Response
from agentx.replay.http1.errors import (
    ConnectError,
    ConnectionClosed,
    ConnectTimeout,
    HTTPTransportError,
)

KEEPALIVE_S = 30.0


class StreamClient:
    """POSTs to one origin (``base_url``, with its path prefix and ``params``) on a pool of
    keep-alive HTTP/1.1 connections. Use as ``async with``; not shared across event loops."""

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float,
        max_connections: int,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_s: float = KEEPALIVE_S,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._query = ("?" + urlencode(dict(params))) if params else ""
        self._ssl = (ssl_context or ssl.create_default_context()) if self._https else None
        default_port = 443 if self._https else 80
        host = self._host if ":" not in self._host else f"[{self._host}]"
        authority = host if self._port == default_port else f"{host}:{self._port}"
        self._fixed = {"host": authority, **{k.lower(): v for k, v in (headers or {}).items()}}
        # what this client sends that the server's text must not carry back into a result
        self.secrets = credential_values(self._fixed, params or {})
        self._heads: dict[tuple[str, tuple[tuple[str, str], ...]], bytes] = {}
        self._connect_timeout_s = connect_timeout_s
        self._keepalive_s = keepalive_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: deque[HTTPConnection] = deque()
        self._open: set[HTTPConnection] = set()
        self._closed = False

    async def __aenter__(self) -> StreamClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        for conn in list(self._open):
            conn.abort()
        self._open.clear()
        self._idle.clear()

    def _head(self, path: str, headers: Mapping[str, str] | None) -> bytes:
        """The request line and headers up to (not including) content-length, memoised."""
        extra = tuple((k.lower(), v) for k, v in (headers or {}).items())
        key = (path, extra)
        head = self._heads.get(key)
        if head is None:
            fields = dict(self._fixed)
            fields.update(extra)
            lines = [f"POST {self._prefix}{path}{self._query} HTTP/1.1"]
            lines += [f"{k}: {v}" for k, v in fields.items() if k != "content-length"]
            head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
            if len(self._heads) < 1024:
                self._heads[key] = head
        return head

    async def _connect(self) -> HTTPConnection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                _, conn = await loop.create_connection(
                    HTTPConnection,
                    self._host,
                    self._port,
                    ssl=self._ssl,
                    server_hostname=self._host if self._ssl else None,
                )
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {self._host}:{self._port} within {self._connect_timeout_s:g} s"
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(f"{type(exc).__name__}: {exc}") from exc
        self._open.add(conn)
        return conn

    def _idle_connection(self) -> HTTPConnection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to be stale
            if conn.reusable(now, self._keepalive_s):
                conn.reused = True
                return conn
            conn.abort()
            self._open.discard(conn)
        return None

    @asynccontextmanager
    async def post(
        self, path: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[Response]:
        """``async with client.post(...) as response``: sent, head received. Leaving the block
        returns the connection to the pool when its response was read to the end, else
        closes it."""
        if self._closed:
            raise HTTPTransportError("the client is closed")
        request = self._head(path, headers) + b"content-length: %d\r\n\r\n" % len(body)
        async with self._slots:
            conn = await self._send(request, body)
            try:
                yield Response(conn)
            finally:
                conn.release()
                if conn.reusable(conn.idle_since, self._keepalive_s) and not self._closed:
                    self._idle.append(conn)
                else:
                    conn.abort()
                    self._open.discard(conn)

    async def _send(self, request: bytes, body: bytes) -> HTTPConnection:
        conn = self._idle_connection()
        if conn is not None:
            try:
                await conn.begin(request, body)
                return conn
            except ConnectionClosed:
                self._open.discard(conn)
                if conn.received:  # it had begun to answer: not the keep-alive race
                    raise
            except BaseException:
                conn.abort()
                self._open.discard(conn)
                raise
        conn = await self._connect()
        try:
            await conn.begin(request, body)
        except BaseException:
            conn.abort()
            self._open.discard(conn)
            raise
        return conn
