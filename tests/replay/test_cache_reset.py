"""--reset-cache: which endpoint each server kind gets, retries while blocks are held, and what a
server without any says (a warning, never a failed run)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from agentx.replay import cache_reset
from agentx.replay.cache_reset import reset_prefix_cache


class FakeServer:
    """Answers the reset endpoints as scripted; records what was asked."""

    def __init__(self, vllm: list[object] | None = None, sglang: list[int] | None = None) -> None:
        self.vllm = vllm  # JSON bodies to answer in turn; None: 404
        self.sglang = sglang  # statuses to answer in turn; None: 404
        self.calls: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()

        async def reset(request: web.Request) -> web.StreamResponse:
            self.calls.append(f"{request.path}?{request.query_string}")
            if self.vllm is None:
                raise web.HTTPNotFound()
            return web.json_response(self.vllm.pop(0))

        async def flush(request: web.Request) -> web.StreamResponse:
            self.calls.append(request.path)
            if self.sglang is None:
                raise web.HTTPNotFound()
            return web.Response(status=self.sglang.pop(0))

        app.router.add_post("/reset_prefix_cache", reset)
        app.router.add_post("/flush_cache", flush)
        return app


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_reset, "RETRY_S", 0.01)


async def _serve(fake: FakeServer) -> AsyncIterator[str]:
    runner = web.AppRunner(fake.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _reset(fake: FakeServer, kind: str) -> cache_reset.CacheReset:
    async for url in _serve(fake):
        async with httpx.AsyncClient() as client:
            return await reset_prefix_cache(client, url, kind)
    raise AssertionError("unreachable")


async def test_vllm_resets_the_external_tier_too() -> None:
    fake = FakeServer(vllm=[{"success": True}])
    r = await _reset(fake, "vllm")
    assert r.ok and r.endpoint == "/reset_prefix_cache"
    assert fake.calls == ["/reset_prefix_cache?reset_external=true"]


async def test_vllm_busy_then_free_is_retried() -> None:
    fake = FakeServer(vllm=[{"success": False}, {"success": False}, {"success": True}])
    r = await _reset(fake, "vllm")
    assert r.ok and len(fake.calls) == 3


async def test_vllm_without_dev_mode_says_how() -> None:
    fake = FakeServer()
    r = await _reset(fake, "vllm")
    assert not r.ok and "HTTP 404" in r.message and "VLLM_SERVER_DEV_MODE=1" in r.message
    assert fake.calls == ["/reset_prefix_cache?reset_external=true"]  # no retry on a 404


async def test_vllm_always_busy_gives_up() -> None:
    fake = FakeServer(vllm=[{"success": False}] * cache_reset.ATTEMPTS)
    r = await _reset(fake, "vllm")
    assert not r.ok and "success=false" in r.message
    assert len(fake.calls) == cache_reset.ATTEMPTS


async def test_sglang_flush_and_busy() -> None:
    fake = FakeServer(sglang=[400, 200])
    r = await _reset(fake, "sglang")
    assert r.ok and r.endpoint == "/flush_cache" and fake.calls == ["/flush_cache"] * 2


async def test_unknown_server_tries_both() -> None:
    fake = FakeServer(sglang=[200])
    r = await _reset(fake, "unknown")
    assert r.ok and r.endpoint == "/flush_cache"
    fake = FakeServer()
    r = await _reset(fake, "unknown")
    assert not r.ok and "no known cache-reset endpoint" in r.message


async def test_unreachable_is_not_an_exception() -> None:
    async with httpx.AsyncClient() as client:
        r = await reset_prefix_cache(client, "http://127.0.0.1:9", "vllm")
    assert not r.ok and "ConnectError" in r.message
