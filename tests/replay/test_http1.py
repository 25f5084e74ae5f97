"""The lanes' HTTP/1.1 client against scripted servers: framing, keep-alive, timestamps, TLS."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentx.apis import Api
from agentx.core.record import ERR_PROTOCOL, ERR_RESET
from agentx.replay.client import make_stream_client, stream_request
from agentx.replay.http1.errors import ConnectionClosed, MalformedResponse
from agentx.replay.http1.pool import StreamClient

from .tls import self_signed

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), ext, data)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


@asynccontextmanager
async def serving(
    handler: Handler, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, list[int]]]:
    """A scripted server; yields its URL and the list of connections it accepted."""
    accepted: list[int] = []

    async def wrapped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(wrapped, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", accepted


async def body_of(client: StreamClient, path: str = "/x") -> tuple[int, bytes, list[int]]:
    stamps: list[int] = []
    parts: list[bytes] = []

    def sink(data: bytes, t: int) -> None:
        parts.append(data)
        stamps.append(t)

    async with client.post(path, b'{"a":1}') as response:
        await response.stream(sink)
        return response.status, b"".join(parts), stamps


def client_for(url: str, **kw: object) -> StreamClient:
    return StreamClient(url, connect_timeout_s=5, max_connections=4, **kw)  # type: ignore[arg-type]


async def test_chunked_with_extensions_and_trailers() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n")
        writer.write(chunk(EVENT, b";name=v") + chunk(USAGE) + b"0\r\nx-trailer: 1\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with serving(handler) as (url, _), client_for(url) as client:
        status, body, _ = await body_of(client)
    assert status == 200 and body == EVENT + USAGE


async def test_content_length_and_eof_delimited_bodies() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"content-length: %d\r\n\r\n" % len(EVENT) + EVENT)
        await read_request(reader)  # the same connection: keep-alive
        writer.write(SSE_HEAD + b"connection: close\r\n\r\n" + EVENT + USAGE)
        await writer.drain()
        writer.close()

    async with serving(handler) as (url, accepted), client_for(url) as client:
        assert (await body_of(client))[1] == EVENT
        assert (await body_of(client))[1] == EVENT + USAGE  # ends with the connection
    assert len(accepted) == 1


async def test_keep_alive_reuses_one_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunk(EVENT))
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async with serving(handler) as (url, accepted), client_for(url) as client:
        for _ in range(5):
            assert (await body_of(client))[1] == EVENT
    assert len(accepted) == 1


async def test_a_server_closing_an_idle_connection_is_retried_on_a_new_one() -> None:
    """The keep-alive race: the server drops the idle connection as the request goes out."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"content-length: %d\r\n\r\n" % len(EVENT) + EVENT)
        await writer.drain()
        await read_request(reader)  # the second request on this connection: hang up unanswered

    async with serving(handler) as (url, accepted), client_for(url) as client:
        assert (await body_of(client))[1] == EVENT
        assert (await body_of(client))[1] == EVENT
    assert len(accepted) == 2


async def test_a_connection_closed_mid_answer_is_not_retried() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"content-length: 1000\r\n\r\n" + EVENT)
        await writer.drain()

    async with serving(handler) as (url, accepted), client_for(url) as client:
        with pytest.raises(ConnectionClosed, match="before the response ended"):
            await body_of(client)
    assert len(accepted) == 1


async def test_interim_1xx_responses_are_skipped() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n")
        writer.write(SSE_HEAD + b"content-length: %d\r\n\r\n" % len(EVENT) + EVENT)
        await writer.drain()
        await reader.read()

    async with serving(handler) as (url, _), client_for(url) as client:
        status, body, _ = await body_of(client)
    assert status == 200 and body == EVENT


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["not-http", "bad-chunk-size"],
)
async def test_malformed_http_is_a_protocol_row(answer: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()

    async with serving(handler) as (url, _):
        async with client_for(url) as client:
            with pytest.raises(MalformedResponse):
                await body_of(client)
        async with make_stream_client(url, timeout_s=5, max_connections=2) as client2:
            out = await stream_request(client2, "/v1/chat/completions", b"{}", Api.OPENAI_CHAT)
    assert out.error_type == ERR_PROTOCOL and not out.ok


async def test_every_read_is_timestamped_when_it_arrives() -> None:
    """Two events in one write share a read (gap 0); a pause between writes shows in the ITL."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunk(EVENT + EVENT))
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(chunk(EVENT + USAGE + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with (
        serving(handler) as (url, _),
        make_stream_client(url, timeout_s=5, max_connections=2) as client,
    ):
        out = await stream_request(client, "/v1/chat/completions", b"{}", Api.OPENAI_CHAT)
    assert out.ok and out.error_type is None
    assert len(out.itl_ns) == 2
    assert out.itl_ns[0] == 0  # same read
    assert out.itl_ns[1] >= 150_000_000  # the pause (generous: a loaded machine only adds)


async def test_a_response_cut_after_its_head_is_a_reset_row() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n" + chunk(EVENT))
        await writer.drain()

    async with (
        serving(handler) as (url, _),
        make_stream_client(url, timeout_s=5, max_connections=2) as client,
    ):
        out = await stream_request(client, "/v1/chat/completions", b"{}", Api.OPENAI_CHAT)
    assert out.error_type == ERR_RESET and out.ttft_ns is not None


async def test_request_line_headers_and_query() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with serving(handler) as (url, _):
        client = StreamClient(
            url + "/prefix/",
            connect_timeout_s=5,
            max_connections=1,
            headers={"Authorization": "Bearer k"},
            params={"api-version": "1 2"},
        )
        async with client, client.post("/v1/chat", b"{}", {"x-extra": "y"}) as response:
            assert response.status == 200 and await response.read() == b""
    request = seen[0].decode()
    assert request.startswith("POST /prefix/v1/chat?api-version=1+2 HTTP/1.1\r\n")
    assert f"host: 127.0.0.1:{url.rsplit(':', 1)[1]}\r\n" in request
    assert "authorization: Bearer k\r\n" in request and "x-extra: y\r\n" in request
    assert request.endswith("content-length: 2\r\n\r\n{}")


async def test_tls(tmp_path: Path) -> None:
    server_ctx, ca = self_signed(tmp_path)
    client_ctx = ssl.create_default_context(cafile=str(ca))

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(SSE_HEAD + b"content-length: %d\r\n\r\n" % len(EVENT) + EVENT)
        await writer.drain()
        await reader.read()

    async with serving(handler, tls=server_ctx) as (url, _):
        async with client_for(url, ssl_context=client_ctx) as client:
            assert (await body_of(client))[1] == EVENT
        async with make_stream_client(url, timeout_s=5, max_connections=1) as untrusted:
            out = await stream_request(untrusted, "/v1/chat/completions", b"{}", Api.OPENAI_CHAT)
    assert out.error_type == "connect" and "CERTIFICATE_VERIFY_FAILED" in (out.error or "")
