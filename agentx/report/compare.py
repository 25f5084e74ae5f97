"""Compare two runs key by key: base vs new, delta, ratio, and whether the change is for the
better; which keys are the headline, what each is called, and the verdict over the headline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from agentx.results.compare import Comparison, ConfigDifference, MetricRow, RunRef
from agentx.results.summary import LATENCY_METRICS, Summary

SAME_WITHIN = 0.01  # |ratio - 1| below this is "same"

LOWER, HIGHER, NEUTRAL = "lower", "higher", "neutral"
_LAT = ("p50", "p90", "p99", "mean")

Figure = Callable[[Summary], float | None]


def _latency(metric: str, stat: str) -> Figure:
    return lambda s: s.latency_ms.of(metric).stat(stat)


def _per_user(stat: str) -> Figure:
    return lambda s: s.per_user_output_tokens_per_s.stat(stat)


# (dotted key in summary.json, which way is better, its figure), in display order
KEYS: tuple[tuple[str, str, Figure], ...] = (
    ("requests.total", NEUTRAL, lambda s: s.requests.total),
    ("requests.ok", HIGHER, lambda s: s.requests.ok),
    ("requests.errors", LOWER, lambda s: s.requests.errors),
    ("throughput.requests_per_s", HIGHER, lambda s: s.throughput.requests_per_s),
    ("throughput.input_tokens_per_s", HIGHER, lambda s: s.throughput.input_tokens_per_s),
    ("throughput.output_tokens_per_s", HIGHER, lambda s: s.throughput.output_tokens_per_s),
    *((f"latency_ms.{m}.{st}", LOWER, _latency(m, st)) for m in LATENCY_METRICS for st in _LAT),
    *((f"per_user_output_tokens_per_s.{st}", HIGHER, _per_user(st)) for st in _LAT),
    ("cache.reported_hit_rate", HIGHER, lambda s: s.cache.reported_hit_rate),
    ("cache.server_metrics_hit_rate", HIGHER, lambda s: s.cache.server_metrics_hit_rate),
    # a property of the trace, not of the server
    ("cache.theoretical_hit_rate", NEUTRAL, lambda s: s.cache.theoretical_hit_rate),
    ("schedule.dispatch_lag_ms.p99", LOWER, lambda s: s.schedule.dispatch_lag_ms.p99),
    (
        "slo.goodput.fraction",
        HIGHER,
        lambda s: None if s.slo.goodput is None else s.slo.goodput.fraction,
    ),
    ("client.cpu_percent", LOWER, lambda s: s.client.cpu_percent),
    (
        "cost.usd_per_million_output_tokens",
        LOWER,
        lambda s: None if s.cost is None else s.cost.usd_per_million_output_tokens,
    ),
    (
        "cost.usd_per_million_total_tokens",
        LOWER,
        lambda s: None if s.cost is None else s.cost.usd_per_million_total_tokens,
    ),
    ("cost.gross_margin", HIGHER, lambda s: None if s.cost is None else s.cost.gross_margin),
)
METRIC_LABELS = {"ttft": "TTFT", "ttfc": "TTFC", "itl": "ITL", "tpot": "TPOT", "e2e": "E2E"}
# what a reader calls each key (the JSON keeps the dotted key)
LABELS: dict[str, str] = {
    "requests.total": "requests",
    "requests.ok": "requests ok",
    "requests.errors": "errors",
    "throughput.requests_per_s": "requests/s",
    "throughput.input_tokens_per_s": "input tokens/s",
    "throughput.output_tokens_per_s": "output tokens/s",
    **{f"latency_ms.{m}.{st}": f"{METRIC_LABELS[m]} {st}" for m in LATENCY_METRICS for st in _LAT},
    **{f"per_user_output_tokens_per_s.{st}": f"output tok/s per user {st}" for st in _LAT},
    "cache.reported_hit_rate": "hit rate: reported (usage)",
    "cache.server_metrics_hit_rate": "hit rate: server /metrics",
    "cache.theoretical_hit_rate": "hit rate: theoretical",
    "schedule.dispatch_lag_ms.p99": "dispatch lag p99",
    "slo.goodput.fraction": "goodput (share of requests)",
    "client.cpu_percent": "client CPU %",
    "cost.usd_per_million_output_tokens": "cost per M output tokens",
    "cost.usd_per_million_total_tokens": "cost per M tokens",
    "cost.gross_margin": "gross margin",
}
# the figures a comparison leads with, in this order: the hit rates, TTFT and ITL at p50 and p99,
# tokens/s in total and per user, and the errors
HEADLINE = (
    "cache.reported_hit_rate",
    "cache.server_metrics_hit_rate",
    "cache.theoretical_hit_rate",
    "latency_ms.ttft.p50",
    "latency_ms.ttft.p99",
    "latency_ms.itl.p50",
    "latency_ms.itl.p99",
    "throughput.output_tokens_per_s",
    "per_user_output_tokens_per_s.p50",
    "requests.errors",
)


def key_label(key: str) -> str:
    """A comparison key as a reader calls it (``latency_ms.ttft.p50`` -> ``TTFT p50``)."""
    return LABELS.get(key, key)


def headline_rows(cmp: Comparison) -> list[MetricRow]:
    """The rows of :data:`HEADLINE` the comparison has, in that order."""
    by_key = {r.key: r for r in cmp.metrics}
    return [by_key[k] for k in HEADLINE if k in by_key]


def other_rows(cmp: Comparison) -> list[MetricRow]:
    """Every row not in the headline, in the comparison's order."""
    return [r for r in cmp.metrics if r.key not in HEADLINE]


class Verdict(StrEnum):
    """The comparison in one word, over the headline figures that have a better direction."""

    BETTER = "better"  # some better, none worse
    WORSE = "worse"  # some worse, none better
    MIXED = "mixed"  # some of each
    SAME = "same"  # each within 1 %
    UNKNOWN = "unknown"  # no headline figure known on both sides


def verdict(cmp: Comparison) -> Verdict:
    changes = [r.change for r in headline_rows(cmp) if r.better != NEUTRAL]
    better, worse = "better" in changes, "worse" in changes
    if better and worse:
        return Verdict.MIXED
    if better:
        return Verdict.BETTER
    if worse:
        return Verdict.WORSE
    return Verdict.SAME if "same" in changes else Verdict.UNKNOWN


# config keys that differ between any two runs and say nothing about what was measured
INCIDENTAL = frozenset(
    {"output_dir", "progress", "interrupted", "metrics_url", "cost", "percentiles"}
)


def _change(base: float, new: float, better: str) -> str:
    if base == new or (base != 0 and abs(new / base - 1) < SAME_WITHIN):
        return "same"
    if better == NEUTRAL:
        return "changed"
    return "better" if (new < base) == (better == LOWER) else "worse"


def _run(s: Summary) -> RunRef:
    return RunRef(s.endpoint, s.model, s.started_at, s.duration_s)


def config_differences(base: Summary, new: Summary) -> list[ConfigDifference]:
    """The run options (``summary.config``, plus model and endpoint) that differ between two runs:
    a comparison of runs that replayed different things measures the difference too."""
    out = []
    for key, b, n in (("model", base.model, new.model), ("endpoint", base.endpoint, new.endpoint)):
        if b != n:
            out.append(ConfigDifference(key, b, n))
    bc: Mapping[str, Any] = base.config
    nc: Mapping[str, Any] = new.config
    for key in sorted(set(bc) | set(nc)):
        if key in INCIDENTAL or key in ("model",):
            continue
        if bc.get(key) != nc.get(key):
            out.append(ConfigDifference(f"config.{key}", bc.get(key), nc.get(key)))
    return out


def compare(base: Summary, new: Summary) -> Comparison:
    """``agentx.compare/1``: one row per key either run has, ``None`` where a run lacks it;
    ``config_differences`` lists the options that differ (a warning when not empty)."""
    rows = []
    for key, better, figure in KEYS:
        b, n = figure(base), figure(new)
        if b is None and n is None:
            continue
        if b is None or n is None:
            rows.append(MetricRow(key, b, n, None, None, better, None))
            continue
        ratio = n / b if b != 0 else None
        rows.append(MetricRow(key, b, n, n - b, ratio, better, _change(b, n, better)))
    return Comparison(_run(base), _run(new), tuple(rows), tuple(config_differences(base, new)))
