"""MetricsScraper against a real aiohttp /metrics server on 127.0.0.1 whose counters move."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import web

from agentx.metrics.prometheus import MetricsScraper


@dataclass
class FakeVllm:
    """Scrape number k sees 100 (k - 1) queried and 40 (k - 1) hit tokens, as if requests ran in
    between, and KV usage k: the last point of the time series says which scrape it saw last (a
    scrape in flight when stop() cancels the task reaches the server but not the result)."""

    served: int = 0
    fail_at: set[int] = field(default_factory=set)  # scrape numbers answered with a 500
    reset_at: int | None = None  # the scrape number at which the engine "restarts"
    wanted: int = 0
    enough: asyncio.Event = field(default_factory=asyncio.Event)

    async def metrics(self, request: web.Request) -> web.Response:
        self.served += 1
        k = self.served
        if k >= self.wanted:
            self.enough.set()
        if k in self.fail_at:
            return web.Response(status=500, text="boom")
        n = k - self.reset_at if self.reset_at is not None and k >= self.reset_at else k - 1
        body = (
            "# TYPE vllm:prefix_cache_queries counter\n"
            f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {100.0 * n}\n'
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {40.0 * n}\n'
            f'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {float(k)}\n'
        )
        return web.Response(text=body, content_type="text/plain")


async def not_found(request: web.Request) -> web.Response:
    return web.json_response({"detail": "Not Found"}, status=200)


@pytest.fixture
async def server() -> AsyncIterator[tuple[FakeVllm, str]]:
    fake = FakeVllm()
    app = web.Application()
    app.router.add_get("/metrics", fake.metrics)
    app.router.add_get("/json", not_found)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield fake, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def scrape_until(fake: FakeVllm, url: str, scrapes: int):  # type: ignore[no-untyped-def]
    fake.wanted = scrapes
    async with httpx.AsyncClient() as client:
        scraper = MetricsScraper(url + "/metrics", client, interval_s=0.01)
        await scraper.start()
        await asyncio.wait_for(fake.enough.wait(), timeout=10)
        return await scraper.stop()


def last_seen(m) -> int:  # type: ignore[no-untyped-def]
    return int(m.time_series[-1]["kv_cache_usage_perc"])


class TestScraper:
    async def test_deltas_between_first_and_last_scrape(self, server) -> None:  # type: ignore[no-untyped-def]
        fake, url = server
        m = await scrape_until(fake, url, 5)
        # the baseline, >= 3 background ticks, the final scrape in stop()
        assert m.scrapes >= 5 and m.scrape_errors == 0
        assert m.queries == 100 * (last_seen(m) - 1) and m.hits == 40 * (last_seen(m) - 1)
        assert m.hit_rate == pytest.approx(0.4)
        assert len(m.time_series) == m.scrapes
        assert m.time_series[0]["hit_rate"] is None
        assert all(p["hit_rate"] == pytest.approx(0.4) for p in m.time_series[1:])
        assert sum(p["queries"] for p in m.time_series[1:]) == m.queries
        t = [p["t_ns"] for p in m.time_series]
        assert t == sorted(t)
        assert m.kv_cache_usage_perc is not None and m.kv_cache_usage_perc.max == last_seen(m)

    async def test_failed_scrapes_are_counted_and_skipped(self, server) -> None:  # type: ignore[no-untyped-def]
        fake, url = server
        fake.fail_at = {2, 3}
        m = await scrape_until(fake, url, 6)
        assert m.scrape_errors == 2
        # the counters kept moving while the scrapes failed: their increments are not lost
        assert m.queries == 100 * (last_seen(m) - 1)
        assert m.hit_rate == pytest.approx(0.4)

    async def test_engine_restart_mid_run(self, server) -> None:  # type: ignore[no-untyped-def]
        fake, url = server
        fake.reset_at = 3
        m = await scrape_until(fake, url, 6)
        # scrape 2 saw 100; scrape 3 saw 0 after the restart (a reset: +0); then +100 per scrape
        assert m.queries == 100 * (1 + last_seen(m) - 3)
        assert m.hit_rate == pytest.approx(0.4)

    async def test_latest_point_for_a_live_display(self, server) -> None:  # type: ignore[no-untyped-def]
        _, url = server
        async with httpx.AsyncClient() as client:
            scraper = MetricsScraper(url + "/metrics", client, interval_s=3600)
            assert scraper.latest is None
            await scraper.scrape()
            await scraper.scrape()
            assert scraper.latest is not None and scraper.latest["hit_rate"] == pytest.approx(0.4)


class TestProbe:
    async def test_metrics_endpoint_answers(self, server) -> None:  # type: ignore[no-untyped-def]
        _, url = server
        async with httpx.AsyncClient() as client:
            assert await MetricsScraper(url + "/metrics", client).probe() is True

    async def test_not_prometheus_or_missing(self, server) -> None:  # type: ignore[no-untyped-def]
        _, url = server
        async with httpx.AsyncClient() as client:
            assert await MetricsScraper(url + "/json", client).probe() is False
            assert await MetricsScraper(url + "/nope", client).probe() is False

    async def test_connection_refused(self) -> None:
        import socket

        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        async with httpx.AsyncClient() as client:
            scraper = MetricsScraper(f"http://127.0.0.1:{port}/metrics", client, timeout_s=2)
            assert await scraper.probe() is False
            await scraper.start()
            m = await scraper.stop()
            assert m.scrapes == 0 and m.scrape_errors == 2 and m.hit_rate is None
