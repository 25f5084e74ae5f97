"""What a server answered is the row's word for it: a 200 stays a 200 whatever follows it on the
connection; a redirect, a body-less 2xx and a web page each have their own kind (they were all
"reset: stream ended before its final event"); a gzip-encoded event stream and one whose lines
end in CR alone, which capture reads, replay reads too (they replayed as 100% errors).

Scripted servers on real sockets, through the lanes' client (``stream_request``).
"""

from __future__ import annotations

import asyncio
import gzip
import sys
import zlib

import brotli  # type: ignore[import-untyped]
import orjson
import pytest
from replay.test_http1 import read_request, serving

from agentx.apis import Api
from agentx.core.record import (
    ERR_HTTP,
    ERR_NO_CONTENT,
    ERR_NOT_A_STREAM,
    ERR_PROTOCOL,
    ERR_REDIRECT,
)
from agentx.replay.client import StreamOutcome, make_stream_client, stream_request

BODY = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
EVENTS = (
    b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)
ANSWER = orjson.dumps(
    {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
)


def head(status: str, *headers: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *headers]) + "\r\n\r\n").encode()


async def answered(*replies: bytes) -> StreamOutcome:
    """One request to a server that writes ``replies`` at once, then keeps the connection."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"".join(replies))
        await writer.drain()
        await asyncio.sleep(0.5)

    async with (
        serving(handler) as (url, _),
        make_stream_client(url, timeout_s=10, max_connections=2) as client,
    ):
        return await stream_request(
            client, "/v1/chat/completions", BODY, Api.OPENAI_CHAT, timeout_s=10
        )


def ok(out: StreamOutcome, completion_tokens: int) -> None:
    assert (out.ok, out.status, out.error_type) == (True, 200, None), out.error
    assert out.completion_tokens == completion_tokens


UNSOLICITED = head("500 Internal Server Error", "content-length: 5") + b"oops!"


async def test_an_unsolicited_500_after_a_200_keeps_the_200() -> None:
    """It was recorded as HTTP 500 with the 200's body as error text."""
    json_head = head("200 OK", "content-type: application/json", f"content-length: {len(ANSWER)}")
    ok(await answered(json_head + ANSWER, UNSOLICITED), 1)
    sse_head = head("200 OK", "content-type: text/event-stream", f"content-length: {len(EVENTS)}")
    ok(await answered(sse_head + EVENTS, UNSOLICITED), 2)


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        (
            head("307 Temporary Redirect", "location: http://127.0.0.1:1/v2", "content-length: 0"),
            ERR_REDIRECT,
            "HTTP 307 redirect to http://127.0.0.1:1/v2",
        ),
        (
            head("301 Moved Permanently", "location: https://u:secret@h/?api_key=k") + b"",
            ERR_REDIRECT,
            "HTTP 301 redirect",
        ),
        (head("204 No Content"), ERR_NO_CONTENT, "HTTP 204 without a body"),
        (
            head("200 OK", "content-type: text/html; charset=utf-8", "content-length: 13")
            + b"<html></html>",
            ERR_NOT_A_STREAM,
            "HTTP 200 text/html",
        ),
    ],
    ids=["307", "301", "204", "html"],
)
async def test_answers_that_are_not_streams_have_their_own_kinds(
    reply: bytes, kind: str, words: str
) -> None:
    out = await answered(reply)
    assert (out.ok, out.error_type) == (False, kind)
    assert out.error is not None and out.error.startswith(words), out.error
    assert "secret" not in out.error and "=k" not in out.error  # the Location is redacted


def sse(*headers: str) -> bytes:
    return head("200 OK", "content-type: text/event-stream", *headers)


async def test_a_gzip_encoded_stream_is_read() -> None:
    packed = gzip.compress(EVENTS)
    ok(await answered(sse("content-encoding: gzip", f"content-length: {len(packed)}") + packed), 2)


async def test_a_gzip_encoded_json_answer_is_read() -> None:
    packed = gzip.compress(ANSWER)
    reply = head(
        "200 OK",
        "content-type: application/json",
        "content-encoding: gzip",
        f"content-length: {len(packed)}",
    )
    ok(await answered(reply + packed), 1)


async def test_a_corrupt_or_unknown_encoding_is_a_protocol_row() -> None:
    for encoding, data in (("gzip", b"not gzip at all"), ("compress", EVENTS)):
        reply = sse(f"content-encoding: {encoding}", f"content-length: {len(data)}") + data
        out = await answered(reply)
        assert (out.ok, out.error_type) == (False, ERR_PROTOCOL), out.error
        assert out.error is not None and encoding in out.error


async def test_cr_only_line_endings_are_read() -> None:
    cr = EVENTS.replace(b"\n", b"\r")
    ok(await answered(sse(f"content-length: {len(cr)}") + cr), 2)


def encode(data: bytes, encoding: str) -> bytes:
    """``data`` as a server sends it under ``Content-Encoding: encoding``."""
    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    if encoding == "br":
        return bytes(brotli.compress(data))
    if sys.version_info >= (3, 14):
        from compression import zstd
    else:
        from backports import zstd
    return zstd.compress(data)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
async def test_a_compressed_error_body_is_stored_in_the_servers_words(encoding: str) -> None:
    words = orjson.dumps({"error": {"message": "prompt too long for this model"}})
    body = encode(words, encoding)
    reply = head(
        "400 Bad Request",
        "content-type: application/json",
        f"content-encoding: {encoding}",
        f"content-length: {len(body)}",
    )
    out = await answered(reply + body)
    assert (out.ok, out.error_type, out.status) == (False, ERR_HTTP, 400)
    assert out.error == "HTTP 400: prompt too long for this model", out.error


async def test_an_error_body_that_does_not_decode_says_so() -> None:
    body = b"not gzip at all"
    reply = head(
        "503 Service Unavailable",
        "content-encoding: gzip",
        f"content-length: {len(body)}",
    )
    out = await answered(reply + body)
    assert out.error is not None and "a gzip body that does not decode" in out.error, out.error
