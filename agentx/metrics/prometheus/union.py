"""The server's ``/metrics`` over several shards' runs, each server counted once.

Each shard scrapes the ``/metrics`` page it was given and records, per counter series, the value
at its first scrape, the last value it saw and the reset-aware increase in between
(:class:`~agentx.results.summary.server.CounterSeries`). Shards that scraped the same
page (same URL: shards of one run that all load one server) saw the *same* counters, so their
deltas must not be added up. The rule, per server (metrics URL) and per counter series:

- one shard scraped it: that shard's delta;
- several did, and no shard saw the counter go down: the widest window's delta, i.e. the largest
  last value minus the smallest first value (a series absent from a first scrape was created
  since, and starts from 0). Counters only grow, so this needs no clock agreement between the
  shards' machines;
- the counter went down inside a shard's window, or between two shards' windows (a restarted
  server): the union of windows cannot be rebuilt from two scrapes per shard, so the largest
  shard delta is used (a lower bound) and a warning says so.

Then the servers' deltas are summed (distinct servers, e.g. one per shard, add up), and the hit
rate, tiers and raw deltas are derived as for one run. The KV-usage gauge is pooled: percentiles
of every scrape's sample of every server.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentx.core.percentiles import percentiles
from agentx.metrics.prometheus.server_metrics import (
    ServerMetrics,
    add_deltas,
    aggregate,
    cache_counts,
    tiers,
)
from agentx.results.summary.server import CounterSeries, MergedServer, SeriesKey, ServerBlock

RULE_ONE = "one scrape"
RULE_WIDEST = "widest window (largest last value - smallest first value)"
RULE_RESET = "counter went down (restart?): largest shard delta, a lower bound"


@dataclass(frozen=True, slots=True)
class Scrape:
    """One shard's view of one ``/metrics`` page, on the wall clock (ns)."""

    label: str  # which shard (or merged group) it comes from
    url: str
    window_wall_ns: tuple[int, int] | None  # first and last scrape
    counters: tuple[CounterSeries, ...]
    kv_samples: tuple[tuple[int, float], ...] = ()  # (wall ns, kv_cache_usage_perc)
    scrapes: int = 0
    scrape_errors: int = 0


def normalise_url(url: str) -> str:
    """The identity of a metrics page: scheme and host lower-cased, no trailing slash."""
    parts = urlsplit(url.strip())
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")
    )


def _changed(a: float, b: float) -> bool:
    return abs(a - b) > 1e-9 * max(1.0, abs(a), abs(b))


def _reset_between(members: Sequence[Scrape], key: SeriesKey) -> bool:
    """Did the counter go down between two shards' windows that do not overlap?"""
    timed = [m for m in members if m.window_wall_ns is not None]
    by_key = {id(m): {c.key: c for c in m.counters} for m in timed}
    for a in timed:
        ca = by_key[id(a)].get(key)
        if ca is None or a.window_wall_ns is None:
            continue
        for b in timed:
            if b is a or b.window_wall_ns is None or a.window_wall_ns[1] >= b.window_wall_ns[0]:
                continue
            cb = by_key[id(b)].get(key)
            start = 0.0 if cb is None or cb.first is None else cb.first
            if cb is not None and start < ca.last and _changed(start, ca.last):
                return True
    return False


def union_one_server(url: str, members: Sequence[Scrape]) -> tuple[MergedServer, list[str]]:
    """Count one server once over the shards that scraped it (the rule in the module doc)."""
    warnings: list[str] = []
    series: dict[SeriesKey, list[CounterSeries]] = {}
    for m in members:
        for c in m.counters:
            series.setdefault(c.key, []).append(c)
    out: list[CounterSeries] = []
    rules: dict[str, str] = {}
    for key in sorted(series):
        cs = series[key]
        firsts = [c.first for c in cs]
        first = None if any(f is None for f in firsts) else min(f for f in firsts if f is not None)
        last = max(c.last for c in cs)
        if len(cs) == 1:
            delta = cs[0].delta
        elif any(_changed(c.delta, c.last - (c.first or 0.0)) for c in cs) or _reset_between(
            members, key
        ):
            delta = max(c.delta for c in cs)
            rules[key[0]] = RULE_RESET
        else:
            delta = last - (first or 0.0)
            rules.setdefault(key[0], RULE_WIDEST)
        out.append(CounterSeries(key[0], key[1], first, last, delta))
    reset = sorted(name for name, rule in rules.items() if rule == RULE_RESET)
    if reset:
        warnings.append(
            f"{url}: {', '.join(reset)} went down during the shards' runs (a server restart?): "
            "the merged delta is the largest shard's, a lower bound"
        )
    windows = [m.window_wall_ns for m in members if m.window_wall_ns is not None]
    window = (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None
    union = MergedServer(
        url=url,
        shards=tuple(m.label for m in members),
        window_wall_ns=window,
        counters=tuple(out),
        rules=rules,
        scrapes=sum(m.scrapes for m in members),
        scrape_errors=sum(m.scrape_errors for m in members),
    )
    return union, warnings


@dataclass(frozen=True, slots=True)
class MergedServers:
    metrics: ServerMetrics | None
    servers: tuple[MergedServer, ...]
    warnings: tuple[str, ...]


def union_servers(scrapes: Iterable[Scrape]) -> MergedServers:
    """Every server counted once (by metrics URL), then summed over servers."""
    groups: dict[str, list[Scrape]] = {}
    for s in scrapes:
        groups.setdefault(normalise_url(s.url), []).append(s)
    if not groups:
        return MergedServers(None, (), ())
    total: dict[SeriesKey, float] = {}
    servers: list[MergedServer] = []
    warnings: list[str] = []
    samples: list[tuple[int, float]] = []
    for url in sorted(groups):
        union, warn = union_one_server(url, groups[url])
        servers.append(union)
        warnings.extend(warn)
        add_deltas(total, {c.key: c.delta for c in union.counters})
        samples.extend(p for m in groups[url] for p in m.kv_samples)
    samples.sort()
    counts = cache_counts(total) if total else None
    metrics = ServerMetrics(
        hit_rate=None if counts is None else counts.hit_rate,
        tiers=tiers(total) if total else None,
        kv_cache_usage_perc=percentiles([v for _, v in samples]) if samples else None,
        time_series=[_point(t, v) for t, v in samples],
        raw_deltas=aggregate(total),
        source=None if counts is None else counts.source,
        queries=None if counts is None else counts.queries,
        hits=None if counts is None else counts.hits,
        scrapes=sum(s.scrapes for s in servers),
        scrape_errors=sum(s.scrape_errors for s in servers),
        url=servers[0].url if len(servers) == 1 else None,
    )
    return MergedServers(metrics, tuple(servers), tuple(warnings))


def _point(t_ns: int, kv: float) -> dict[str, Any]:
    return {
        "t_ns": t_ns,
        "queries": None,
        "hits": None,
        "hit_rate": None,
        "kv_cache_usage_perc": kv,
        "running": None,
        "waiting": None,
    }


def scrapes_of(label: str, server: ServerBlock | None, offset_ns: int) -> list[Scrape]:
    """The scrapes a ``summary.json`` ``server`` block holds (one for a run, one per server for
    a merge), their times moved onto the wall clock by ``offset_ns``. Empty when the run
    scraped nothing or was written by an agentx that kept no raw counters."""
    if server is None:
        return []
    if server.servers is not None:  # a merged results directory: its times are wall clock already
        return [
            Scrape(
                label=f"{label}:{i}",
                url=s.url,
                window_wall_ns=s.window_wall_ns,
                counters=s.counters,
                kv_samples=() if i else server.kv_cache_usage_samples,
                scrapes=s.scrapes,
                scrape_errors=s.scrape_errors,
            )
            for i, s in enumerate(server.servers)
        ]
    if not server.url or server.counters is None:
        return []
    window = server.window_t_ns
    return [
        Scrape(
            label=label,
            url=server.url,
            window_wall_ns=(window[0] + offset_ns, window[1] + offset_ns) if window else None,
            counters=server.counters,
            kv_samples=tuple((t + offset_ns, v) for t, v in server.kv_cache_usage_samples),
            scrapes=server.scrapes or 0,
            scrape_errors=server.scrape_errors or 0,
        )
    ]
