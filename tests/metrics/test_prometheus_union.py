"""Several shards' /metrics: each server counted once (widest window), distinct servers summed,
restarts detected and never double counted."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from agentx.metrics.prometheus.union import (
    RULE_RESET,
    RULE_WIDEST,
    Scrape,
    normalise_url,
    scrapes_of,
    union_servers,
)
from agentx.metrics.summary import _server_block
from agentx.results.summary.server import CounterSeries, ServerBlock

from .test_prometheus import AFTER, BEFORE, run

Q = "vllm:prefix_cache_queries"
H = "vllm:prefix_cache_hits"
URL = "http://10.0.0.1:8000/metrics"
LABELS = (("engine", "0"), ("model_name", "m"))


def series(
    name: str, first: float | None, last: float, delta: float | None = None
) -> CounterSeries:
    return CounterSeries(
        name, LABELS, first, last, last - (first or 0.0) if delta is None else delta
    )


def scrape(label: str, window: tuple[int, int], *counters: CounterSeries, url: str = URL) -> Scrape:
    return Scrape(label, url, window, counters, scrapes=3)


def test_one_server_scraped_by_every_shard_counts_once_over_the_widest_window() -> None:
    a = scrape("0/3", (0, 100), series(Q, 1000, 4000), series(H, 500, 3000))
    b = scrape("1/3", (5, 110), series(Q, 1500, 5000), series(H, 800, 3900))
    c = scrape("2/3", (2, 90), series(Q, 1200, 3800), series(H, 600, 2900))
    merged = union_servers([a, b, c])
    assert merged.metrics is not None
    assert merged.metrics.queries == 5000 - 1000  # not 3000 + 3500 + 2600
    assert merged.metrics.hits == 3900 - 500
    (server,) = merged.servers
    assert server.rules == {Q: RULE_WIDEST, H: RULE_WIDEST}
    assert server.window_wall_ns == (0, 110)
    assert merged.warnings == ()


def test_distinct_servers_add_up() -> None:
    a = scrape("0/2", (0, 100), series(Q, 0, 1000), series(H, 0, 600), url="http://a:8000/metrics")
    b = scrape(
        "1/2", (0, 100), series(Q, 50, 2050), series(H, 0, 1400), url="http://b:8000/metrics"
    )
    merged = union_servers([a, b])
    assert merged.metrics is not None
    assert (merged.metrics.queries, merged.metrics.hits) == (3000, 2000)
    assert merged.metrics.hit_rate == pytest.approx(2000 / 3000)
    assert merged.metrics.url is None
    assert [s.url for s in merged.servers] == ["http://a:8000/metrics", "http://b:8000/metrics"]


def test_a_series_created_during_a_window_counts_from_zero() -> None:
    a = scrape("0/2", (0, 100), series(Q, None, 700))
    b = scrape("1/2", (10, 120), series(Q, 300, 900))
    merged = union_servers([a, b])
    assert merged.metrics is not None and merged.metrics.queries == 900


def test_a_restart_inside_a_window_falls_back_to_the_largest_shard_delta() -> None:
    # shard 0 saw 1000 -> 4000, restart to 0, -> 500: its reset-aware delta is 3500
    a = scrape("0/2", (0, 100), series(Q, 1000, 500, delta=3500))
    b = scrape("1/2", (0, 100), series(Q, 2000, 500, delta=1500))
    merged = union_servers([a, b])
    assert merged.metrics is not None and merged.metrics.queries == 3500
    assert merged.servers[0].rules == {Q: RULE_RESET}
    assert "lower bound" in merged.warnings[0]


def test_a_restart_between_windows_is_detected() -> None:
    a = scrape("0/2", (0, 100), series(Q, 1000, 4000))
    b = scrape("1/2", (200, 300), series(Q, 10, 900))  # started after a ended, lower counters
    merged = union_servers([a, b])
    assert merged.metrics is not None and merged.metrics.queries == 3000
    assert merged.servers[0].rules == {Q: RULE_RESET}


def test_urls_are_one_server_whatever_their_case_and_trailing_slash() -> None:
    assert normalise_url("HTTP://Host:8000/metrics/") == normalise_url("http://host:8000/metrics")
    a = scrape("0/2", (0, 10), series(Q, 0, 10), url="http://Host:8000/metrics/")
    b = scrape("1/2", (0, 10), series(Q, 0, 10), url="http://host:8000/metrics")
    assert len(union_servers([a, b]).servers) == 1


def block(url: str) -> ServerBlock:
    """summary.json's server block of a run that scraped the real vLLM pages, read back."""
    server = _server_block(dataclasses.replace(run(BEFORE, AFTER), url=url))
    assert server is not None
    return ServerBlock.from_json(orjson.loads(orjson.dumps(server.to_json())))


def test_real_vllm_pages_through_summary_json() -> None:
    one = run(BEFORE, AFTER)
    assert one.counters and all(c.first is not None for c in one.counters)
    same = union_servers([*scrapes_of("0/2", block(URL), 0), *scrapes_of("1/2", block(URL), 5)])
    assert same.metrics is not None
    assert (same.metrics.queries, same.metrics.hits) == (one.queries, one.hits)
    assert same.metrics.hit_rate == one.hit_rate
    assert same.metrics.tiers == one.tiers
    two = union_servers(
        [*scrapes_of("0/2", block(URL), 0), *scrapes_of("1/2", block("http://b/metrics"), 0)]
    )
    assert two.metrics is not None and one.queries is not None
    assert two.metrics.queries == 2 * one.queries
    assert two.metrics.hit_rate == pytest.approx(one.hit_rate)


def test_a_merged_block_merges_again_as_its_servers() -> None:
    a = scrape("0/3", (0, 100), series(Q, 1000, 4000))
    b = scrape("1/3", (5, 110), series(Q, 1500, 5000))
    c = scrape("2/3", (120, 200), series(Q, 5000, 6000))
    first = union_servers([a, b])
    merged_block = ServerBlock.from_json({"servers": [s.to_json() for s in first.servers]})
    again = union_servers([*scrapes_of("m", merged_block, 0), c])
    assert again.metrics is not None and again.metrics.queries == 6000 - 1000
    assert union_servers([a, b, c]).metrics.queries == 5000  # type: ignore[union-attr]


def test_runs_without_raw_counters_give_nothing_to_merge() -> None:
    assert scrapes_of("0/2", None, 0) == []
    old = ServerBlock.from_json({"source": "vllm", "scrapes": 3, "deltas": {}})
    assert scrapes_of("0/2", old, 0) == []
    assert union_servers([]).metrics is None
