"""The streaming client against a real socket: every fault becomes a typed error on the row."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import aiohttp
import httpx
import orjson
import pytest

from agentx.core.record import (
    ERR_CANCELLED,
    ERR_CONNECT,
    ERR_HTTP,
    ERR_NO_USAGE,
    ERR_PROTOCOL,
    ERR_RESET,
    ERR_TIMEOUT,
)
from agentx.replay.client import StreamOutcome, classify, make_stream_client, stream_request

from .fault_server import FaultServer


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(stall_s=5.0) as srv:
        yield srv


def body(fault: str = "ok", max_tokens: int = 5) -> bytes:
    return orjson.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": f"fault:{fault}"}],
            "max_tokens": max_tokens,
            "stream": True,
        }
    )


async def send(url: str, fault: str, timeout_s: float = 5.0) -> StreamOutcome:
    async with make_stream_client(url, timeout_s=timeout_s, max_connections=4) as client:
        return await stream_request(
            client, "/v1/chat/completions", body(fault), "openai.chat", timeout_s=timeout_s
        )


async def test_ok_stream(server: FaultServer) -> None:
    out = await send(server.url, "ok")
    assert out.ok and out.error_type is None and out.status == 200
    assert (out.prompt_tokens, out.completion_tokens, out.cached_tokens) == (10, 5, 0)
    assert out.ttfb_ns is not None and out.ttft_ns is not None and out.e2e_ns is not None
    assert 0 < out.ttfb_ns <= out.ttft_ns <= out.e2e_ns
    assert out.ttfc_ns == out.ttft_ns
    assert len(out.itl_ns) == 4


@pytest.mark.parametrize(
    ("fault", "ok", "error_type", "text"),
    [
        ("nocached", True, None, None),
        ("keepalive", True, None, None),
        ("nousage", True, ERR_NO_USAGE, "usage"),
        ("http500", False, ERR_HTTP, "HTTP 500: engine exploded"),
        ("http400", False, ERR_HTTP, "HTTP 400: context too long"),
        ("reset", False, ERR_RESET, None),
        ("malformed", False, ERR_PROTOCOL, "malformed SSE"),
        ("error_event", False, ERR_PROTOCOL, "oom while decoding"),
        ("truncated", False, ERR_RESET, "before its final event"),
    ],
)
async def test_faults(
    server: FaultServer, fault: str, ok: bool, error_type: str | None, text: str | None
) -> None:
    out = await send(server.url, fault)
    assert out.ok is ok
    assert out.error_type == error_type
    if text:
        assert out.error is not None and text in out.error
    if fault == "nocached":
        assert out.cached_tokens is None and out.prompt_tokens == 10  # unknown, never 0
    if fault in ("reset", "malformed", "error_event"):
        assert out.ttft_ns is not None  # what arrived before the fault is kept


async def test_timeout(server: FaultServer) -> None:
    out = await send(server.url, "stall", timeout_s=0.3)
    assert not out.ok and out.error_type == ERR_TIMEOUT
    assert out.e2e_ns is not None and out.e2e_ns >= 300_000_000


async def test_non_streamed_json_answer(server: FaultServer) -> None:
    out = await send(server.url, "json")
    assert out.ok and out.prompt_tokens == 7 and out.completion_tokens == 1
    assert out.ttft_ns == out.e2e_ns


async def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    out = await send(f"http://127.0.0.1:{port}", "ok")
    assert not out.ok and out.error_type == ERR_CONNECT and out.status is None


async def test_cancelled_request_becomes_a_row(server: FaultServer) -> None:
    arrived = threading.Event()
    server.on_request = lambda _body: arrived.set()
    try:
        async with make_stream_client(server.url, timeout_s=5, max_connections=2) as client:
            task = asyncio.create_task(
                stream_request(client, "/v1/chat/completions", body("stall"), "openai.chat")
            )
            assert await asyncio.to_thread(arrived.wait, 5)
            task.cancel()
            out = await task
    finally:
        server.on_request = None
    assert out.error_type == ERR_CANCELLED and not out.ok
    assert not task.cancelled()  # handled: the caller gets a row, not an exception


def chained(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(
    ("exc", "streaming", "expected"),
    [
        # httpx-aiohttp maps a hang-up to ConnectTimeout: the aiohttp root decides
        (chained(httpx.ConnectTimeout("x"), aiohttp.ServerDisconnectedError()), True, ERR_RESET),
        (chained(httpx.ReadError("x"), aiohttp.ClientPayloadError("cut")), True, ERR_RESET),
        (chained(httpx.ReadTimeout("x"), aiohttp.ServerTimeoutError("slow")), True, ERR_TIMEOUT),
        (
            chained(httpx.ConnectError("x"), ConnectionRefusedError(111, "refused")),
            False,
            ERR_CONNECT,
        ),
        (OSError(113, "no route"), False, ERR_CONNECT),
        (OSError(113, "no route"), True, ERR_RESET),
        (ValueError("odd"), True, "protocol"),
    ],
)
def test_classify(exc: BaseException, streaming: bool, expected: str) -> None:
    assert classify(exc, streaming=streaming)[0] == expected
