"""Scrape a server's Prometheus endpoint before, during (once a second) and after a run.

The deltas cover the measured window: :meth:`MetricsScraper.begin_window` (called when the
warm-up ends) restarts them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx

from agentx.metrics.prometheus.parse import parse_prometheus
from agentx.metrics.prometheus.server_metrics import (
    PREFIXES,
    ServerMetrics,
    Snapshot,
    add_deltas,
    build_server_metrics,
    counter_deltas,
    series_point,
    snapshot,
)
from agentx.results.summary.server import SeriesKey

# Ask for the classic text format: prometheus_client answers OpenMetrics only when asked to.
_HEADERS = {"Accept": "text/plain;version=0.0.4;q=1.0, */*;q=0.1"}


class MetricsScraper:
    """Background scraper of one ``/metrics`` URL.

    ``start()`` takes the baseline scrape and starts a task that scrapes every ``interval_s``
    (on a fixed schedule, skipping ticks it missed); ``stop()`` cancels it, takes the last scrape
    and returns the deltas. A failed scrape is counted and skipped; the run never fails for it.
    Each scrape costs one GET and a parse of only the lines agentx reads.
    """

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        interval_s: float = 1.0,
        timeout_s: float = 5.0,
    ) -> None:
        self.url = url
        self.interval_s = interval_s
        self._client = client
        self._timeout = httpx.Timeout(timeout_s)
        self._task: asyncio.Task[None] | None = None
        self._snapshots: list[Snapshot] = []
        self._last: dict[SeriesKey, float] = {}  # last value seen of every counter series
        self._deltas: dict[SeriesKey, float] = {}
        self._errors = 0

    async def _get(self) -> str | None:
        try:
            resp = await self._client.get(self.url, headers=_HEADERS, timeout=self._timeout)
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            return None
        return resp.content.decode("utf-8", "replace")

    async def probe(self) -> bool:
        """Does the URL answer 200 with at least one Prometheus sample?"""
        text = await self._get()
        return text is not None and bool(parse_prometheus(text))

    async def scrape(self) -> bool:
        """One scrape now; ``False`` (and counted) when it failed."""
        text = await self._get()
        t_ns = time.perf_counter_ns()
        if text is None:
            self._errors += 1
            return False
        snap = snapshot(parse_prometheus(text, PREFIXES), t_ns)
        if self._snapshots:
            add_deltas(self._deltas, counter_deltas(self._last, snap.counters))
        self._last.update(snap.counters)
        self._snapshots.append(snap)
        return True

    async def _loop(self) -> None:
        step_ns = max(int(self.interval_s * 1e9), 1)
        next_ns = time.perf_counter_ns() + step_ns
        while True:
            now = time.perf_counter_ns()
            if next_ns < now:  # a slow scrape: skip the ticks it overran
                next_ns += ((now - next_ns) // step_ns + 1) * step_ns
            await asyncio.sleep((next_ns - now) / 1e9)
            await self.scrape()
            next_ns += step_ns

    async def start(self) -> None:
        await self.scrape()
        self._task = asyncio.create_task(self._loop(), name="agentx-metrics-scraper")

    async def begin_window(self) -> None:
        """Scrape now and count only from here on: the measured window starts after the
        warm-up, so its requests stay out of the server's figures."""
        await self.scrape()
        self._deltas = {}
        self._snapshots = self._snapshots[-1:]

    async def stop(self) -> ServerMetrics:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.scrape()
        return self.result()

    def result(self) -> ServerMetrics:
        """The deltas so far (``stop()`` returns this after its last scrape)."""
        return build_server_metrics(
            self._snapshots, self._deltas, self._errors, url=self.url, last_seen=self._last
        )

    @property
    def latest(self) -> dict[str, Any] | None:
        """The last scrape's time-series point (for a live display), ``None`` before any."""
        if not self._snapshots:
            return None
        prev = self._snapshots[-2] if len(self._snapshots) > 1 else None
        return series_point(prev, self._snapshots[-1])
