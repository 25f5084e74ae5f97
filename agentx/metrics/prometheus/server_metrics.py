"""What an inference server's ``/metrics`` says about its prefix cache, as deltas over a run.

Counters are compared scrape to scrape *per series* (one series per label set: model, engine,
source), so a counter that resets (a restarted engine) contributes its new value instead of a
negative delta, and data-parallel engines are summed afterwards. Names are matched with or without
the ``_total`` suffix prometheus_client adds to counters; ``_created`` samples are ignored.

vLLM (v1 engine; docs/metrics.md has the derivations):

- ``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits`` (``vllm:gpu_prefix_cache_*`` before
  v0.10): tokens looked up / found in the local (GPU) prefix cache, once per request.
- ``vllm:external_prefix_cache_queries`` / ``_hits``: the KV connector (offload, LMCache, P/D):
  queried are the tokens the local cache missed; hits are tokens loaded from outside.
  Server hit rate = (local hits + external hits) / queries, which is what ``cached_tokens`` in
  the usage block counts.
- ``vllm:prompt_tokens_by_source{source=local_cache_hit|external_kv_transfer|local_compute}``:
  the split of all prompt tokens -> ``tiers``; ``vllm:prompt_tokens_cached_by_source{source=
  device|host|disk|p2p|external_unspecified}`` where the server has it.
- ``vllm:kv_cache_usage_perc`` (``vllm:gpu_cache_usage_perc`` before): a gauge, 0..1.

SGLang: ``sglang:prompt_tokens_total`` and ``sglang:cached_tokens_total`` (with a ``cache_source``
label ``device|host|storage`` on recent versions) give the rate; ``sglang:cache_hit_rate`` (a
gauge) only when those counters are missing; ``sglang:token_usage`` is the KV usage gauge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentx.core.percentiles import P, percentiles, ratio
from agentx.metrics.prometheus.parse import Sample
from agentx.results.summary.server import (
    VLLM_SOURCES,
    CounterSeries,
    ExternalCache,
    SeriesKey,
    TierPart,
    Tiers,
)

COUNTERS = frozenset(
    {
        "vllm:prefix_cache_queries",
        "vllm:prefix_cache_hits",
        "vllm:gpu_prefix_cache_queries",
        "vllm:gpu_prefix_cache_hits",
        "vllm:external_prefix_cache_queries",
        "vllm:external_prefix_cache_hits",
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:prompt_tokens_by_source",
        "vllm:prompt_tokens_cached_by_source",
        "sglang:prompt_tokens",
        "sglang:generation_tokens",
        "sglang:cached_tokens",
    }
)
KV_USAGE_GAUGES = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage")
RUNNING_GAUGES = ("vllm:num_requests_running", "sglang:num_running_reqs")
WAITING_GAUGES = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
HIT_RATE_GAUGES = ("sglang:cache_hit_rate",)
GAUGES = frozenset((*KV_USAGE_GAUGES, *RUNNING_GAUGES, *WAITING_GAUGES, *HIT_RATE_GAUGES))
# Raw-line prefixes worth parsing at all (see parse_prometheus).
PREFIXES = tuple(sorted(COUNTERS | GAUGES))

# labels that name a tier rather than a replica: kept apart when summing over engines
TIER_LABELS = ("source", "cache_source")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One scrape, reduced to the series agentx reads. ``t_ns`` is ``time.perf_counter_ns``."""

    t_ns: int
    counters: Mapping[SeriesKey, float]
    gauges: Mapping[SeriesKey, float]


def snapshot(samples: Iterable[Sample], t_ns: int) -> Snapshot:
    counters: dict[SeriesKey, float] = {}
    gauges: dict[SeriesKey, float] = {}
    for s in samples:
        name = s.name
        if name.endswith("_created"):
            continue
        base = name.removesuffix("_total")
        key = (base, tuple(sorted(s.labels.items())))
        if base in COUNTERS:
            counters[key] = s.value
        elif name in GAUGES:
            gauges[(name, key[1])] = s.value
    return Snapshot(t_ns, counters, gauges)


def counter_deltas(
    prev: Mapping[SeriesKey, float], cur: Mapping[SeriesKey, float]
) -> dict[SeriesKey, float]:
    """Per-series increase from ``prev`` to ``cur``. A drop is a reset: the new value is the delta.

    ``prev`` holds the last value seen of each series; a series absent from it was created since,
    so it counts from 0.
    """
    out: dict[SeriesKey, float] = {}
    for key, value in cur.items():
        before = prev.get(key)
        if before is None or value < before:
            out[key] = value
        else:
            out[key] = value - before
    return out


def add_deltas(acc: dict[SeriesKey, float], d: Mapping[SeriesKey, float]) -> None:
    for key, v in d.items():
        acc[key] = acc.get(key, 0.0) + v


def total(deltas: Mapping[SeriesKey, float], name: str, **match: str) -> float | None:
    """Sum of ``name``'s series (over models and engines) whose labels include ``match``.

    ``None`` when the server exposes no such series at all, which is not the same as 0.
    """
    found = False
    acc = 0.0
    for (base, labels), v in deltas.items():
        if base != name:
            continue
        if match:
            d = dict(labels)
            if any(d.get(k) != want for k, want in match.items()):
                continue
        found = True
        acc += v
    return acc if found else None


def by_label(deltas: Mapping[SeriesKey, float], name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (base, labels), v in deltas.items():
        if base != name:
            continue
        value = dict(labels).get(label)
        if value is not None:
            out[value] = out.get(value, 0.0) + v
    return out


def gauge(snap: Snapshot, names: tuple[str, ...]) -> float | None:
    """Mean over engines of the first of ``names`` the server exposes."""
    for name in names:
        vals = [v for (n, _), v in snap.gauges.items() if n == name]
        if vals:
            return sum(vals) / len(vals)
    return None


@dataclass(frozen=True, slots=True)
class CacheCounts:
    """Token counts behind a hit rate: what the server looked up and found."""

    source: str  # "vllm" | "sglang"
    queries: float
    hits: float

    @property
    def hit_rate(self) -> float | None:
        return ratio(self.hits, self.queries)


def cache_counts(deltas: Mapping[SeriesKey, float]) -> CacheCounts | None:
    queries = total(deltas, "vllm:prefix_cache_queries")
    hits = total(deltas, "vllm:prefix_cache_hits")
    if queries is None:
        queries = total(deltas, "vllm:gpu_prefix_cache_queries")
        hits = total(deltas, "vllm:gpu_prefix_cache_hits")
    if queries is not None:
        external = total(deltas, "vllm:external_prefix_cache_hits") or 0.0
        return CacheCounts("vllm", queries, (hits or 0.0) + external)
    prompt = total(deltas, "sglang:prompt_tokens")
    cached = total(deltas, "sglang:cached_tokens")
    if prompt is not None and cached is not None:
        return CacheCounts("sglang", prompt, cached)
    return None


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


def _part(tokens: float, whole: float | None) -> TierPart:
    return TierPart(_num(tokens), ratio(tokens, whole))


def tiers(deltas: Mapping[SeriesKey, float]) -> Tiers | None:
    """Where prompt tokens came from (GPU hit / external-offload hit / computed), when exposed."""
    parts: dict[str, TierPart] = {}
    prompt_tokens: float | None = None
    split = by_label(deltas, "vllm:prompt_tokens_by_source", "source")
    if split:
        whole = sum(split.values())
        prompt_tokens = _num(whole)
        for source in VLLM_SOURCES:
            parts[source] = _part(split.get(source, 0.0), whole)
    external: ExternalCache | None = None
    eq = total(deltas, "vllm:external_prefix_cache_queries")
    if eq is not None:
        eh = total(deltas, "vllm:external_prefix_cache_hits") or 0.0
        external = ExternalCache(_num(eq), _num(eh), ratio(eh, eq))
    cached = by_label(deltas, "vllm:prompt_tokens_cached_by_source", "source")
    if not cached:
        cached = by_label(deltas, "sglang:cached_tokens", "cache_source")
        prompt = total(deltas, "sglang:prompt_tokens")
        if cached and prompt is not None and prompt_tokens is None:
            prompt_tokens = _num(prompt)
            parts["local_compute"] = _part(max(prompt - sum(cached.values()), 0.0), prompt)
    by_source = {k: _num(v) for k, v in sorted(cached.items())} if cached else None
    if prompt_tokens is None and external is None and by_source is None:
        return None
    return Tiers(
        prompt_tokens=prompt_tokens,
        local_cache_hit=parts.get("local_cache_hit"),
        external_kv_transfer=parts.get("external_kv_transfer"),
        local_compute=parts.get("local_compute"),
        external_prefix_cache=external,
        cached_by_source=by_source,
    )


def aggregate(deltas: Mapping[SeriesKey, float]) -> dict[str, float]:
    """Deltas summed over models and engines, keyed ``name`` or ``name{label=value}`` for tiers."""
    out: dict[str, float] = {}
    for (base, labels), v in deltas.items():
        tier = [f"{k}={val}" for k, val in labels if k in TIER_LABELS]
        key = f"{base}{{{','.join(tier)}}}" if tier else base
        out[key] = out.get(key, 0.0) + v
    return dict(sorted(out.items()))


def counter_series(
    first: Mapping[SeriesKey, float],
    last: Mapping[SeriesKey, float],
    deltas: Mapping[SeriesKey, float],
) -> tuple[CounterSeries, ...]:
    return tuple(
        CounterSeries(key[0], key[1], first.get(key), last[key], deltas.get(key, 0.0))
        for key in sorted(last)
    )


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    """The server's own view of a run: Prometheus deltas between the first and last scrape.

    ``hit_rate`` is ``None`` when the server exposes no prefix-cache counters or looked nothing
    up; ``kv_cache_usage_perc`` is the gauge's distribution over scrapes (0..1, vLLM's unit).
    ``time_series`` has one entry per successful scrape: ``t_ns`` (perf counter), interval
    ``queries``/``hits``/``hit_rate`` (``None`` on the first), and gauges. ``url`` is the page
    scraped and ``counters`` its counter series, raw (see :class:`CounterSeries`).
    """

    hit_rate: float | None = None
    tiers: Tiers | None = None
    kv_cache_usage_perc: P | None = None
    time_series: list[dict[str, Any]] = field(default_factory=list)
    raw_deltas: dict[str, float] = field(default_factory=dict)
    source: str | None = None  # "vllm" | "sglang" | "sglang-gauge"
    queries: float | None = None
    hits: float | None = None
    scrapes: int = 0
    scrape_errors: int = 0
    url: str | None = None
    counters: tuple[CounterSeries, ...] = ()
    # a system of replicas: each replica's own figures, in replica order (the fields above: the
    # replicas' counters added up, or a server-side router's own page)
    replicas: tuple[ServerMetrics, ...] = ()


def series_point(prev: Snapshot | None, cur: Snapshot) -> dict[str, Any]:
    """One time-series entry for ``cur``, with interval figures against ``prev``."""
    counts = cache_counts(counter_deltas(prev.counters, cur.counters)) if prev else None
    return {
        "t_ns": cur.t_ns,
        "queries": None if counts is None else _num(counts.queries),
        "hits": None if counts is None else _num(counts.hits),
        "hit_rate": None if counts is None else counts.hit_rate,
        "kv_cache_usage_perc": gauge(cur, KV_USAGE_GAUGES),
        "running": gauge(cur, RUNNING_GAUGES),
        "waiting": gauge(cur, WAITING_GAUGES),
    }


def build_server_metrics(
    snapshots: list[Snapshot],
    deltas: Mapping[SeriesKey, float],
    scrape_errors: int = 0,
    *,
    url: str | None = None,
    last_seen: Mapping[SeriesKey, float] | None = None,
) -> ServerMetrics:
    """Summarise a run from its successful scrapes and the per-series deltas accumulated over
    them; ``last_seen`` is the last value of every counter series (default: the last scrape's)."""
    if not snapshots:
        return ServerMetrics(scrape_errors=scrape_errors, url=url)
    counts = cache_counts(deltas) if len(snapshots) > 1 else None
    hit_rate = None if counts is None else counts.hit_rate
    source = None if counts is None else counts.source
    if counts is None:
        rates = [g for s in snapshots if (g := gauge(s, HIT_RATE_GAUGES)) is not None]
        if rates:  # an SGLang without token counters: the mean of its own running rate
            hit_rate, source = sum(rates) / len(rates), "sglang-gauge"
    usage = [u for s in snapshots if (u := gauge(s, KV_USAGE_GAUGES)) is not None]
    series = [series_point(p, c) for p, c in zip([None, *snapshots[:-1]], snapshots, strict=True)]
    return ServerMetrics(
        hit_rate=hit_rate,
        tiers=tiers(deltas) if len(snapshots) > 1 else None,
        kv_cache_usage_perc=percentiles(usage) if usage else None,
        time_series=series,
        raw_deltas=aggregate(deltas),
        source=source,
        queries=None if counts is None else counts.queries,
        hits=None if counts is None else counts.hits,
        scrapes=len(snapshots),
        scrape_errors=scrape_errors,
        url=url,
        counters=counter_series(
            snapshots[0].counters,
            snapshots[-1].counters if last_seen is None else last_seen,
            deltas,
        ),
    )
