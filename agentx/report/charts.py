"""The report's charts, built from ``summary.json`` alone, each a named inline SVG.

The HTML page lays them out, ``--png`` writes each as ``<name>.png``. Latency is drawn as CDFs
(from ``rollups.latency_quantiles_ms``, several runs overlaid for a comparison), the per-second
series in buckets wide enough to stay readable on sparse or long runs, turn depths on whole-number
axes, the margin of a run against utilisation when it has a ``cost`` block, and a routed run's
replicas side by side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentx.report import fmt, svg
from agentx.results.summary import Summary
from agentx.results.summary.cost import Cost
from agentx.results.summary.rollups import SecondRow

BUCKETS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
MAX_POINTS = 120  # per-second series: at most this many buckets
MIN_EVENTS = 3  # ... and on average at least this many completions per bucket
MIN_BUCKETS = 6  # ... but never fewer buckets than this (when the run is long enough)
CDF_METRICS = (("ttft", "TTFT"), ("itl", "ITL"), ("e2e", "E2E"))
LOG_SPAN = 20.0  # a CDF gets a log x axis when max / min exceeds this
MARGIN_FLOOR = -1.0  # the margin chart leaves out utilisations losing more than the revenue
MAX_NAMED_REPLICAS = 6  # bar groups labelled "replica I" up to this many, then "I"


@dataclass(frozen=True, slots=True)
class Run:
    """One run drawn on a chart: its label and summary; the base of a comparison is dashed."""

    label: str
    summary: Summary
    dash: bool = False


def pct_tick(v: float) -> str:
    return f"{100 * v:.0f}%"


def _ms_tick(v: float) -> str:
    if v >= 10_000:
        return f"{v / 1000:g} s"
    return f"{v:g}"


# -- latency CDFs ------------------------------------------------------------------------------


def latency_cdf(runs: Sequence[Run], metric: str, label: str, width: int = 330) -> str:
    """The CDF of one latency metric for each run (``rollups.latency_quantiles_ms``). A wide
    spread gets a log axis; values of 0 (token gaps inside one network read) sit at its left
    edge."""
    curves = []
    for run in runs:
        q = run.summary.rollups.latency_quantiles_ms
        curve = None if q is None else q.curve(metric)
        if q is not None and q.levels and curve:
            curves.append((run, q.levels, curve))
    positive = [v for _, _, curve in curves for v in curve if v > 0]
    lo, hi = (min(positive), max(positive)) if positive else (0.0, 0.0)
    log = lo > 0 and hi / lo > LOG_SPAN
    zeros = log and any(v <= 0 for _, _, curve in curves for v in curve)
    series = []
    for i, (run, levels, curve) in enumerate(curves):
        xs = [max(v, lo) for v in curve] if log else curve
        series.append(
            svg.Series(
                run.label if len(runs) > 1 else label,
                [(v, lv / 100) for v, lv in zip(xs, levels, strict=True)],
                svg.PALETTE[i % len(svg.PALETTE)],
                dash=run.dash,
                markers=False,
            )
        )
    scale = ", log scale" + (", 0 at the left edge" if zeros else "") if log else ""
    return svg.line_chart(
        series,
        title=f"{label} distribution (CDF)",
        x_label=f"{label} (ms{scale})",
        y_label="share of requests" if metric != "itl" else "share of token gaps",
        y_format=fmt.pct,
        tick_format=pct_tick,
        x_format=_ms_tick,
        y_max=1.0,
        width=width,
        height=240,
        log_x=log,
    )


def latency_cdfs(runs: Sequence[Run]) -> dict[str, str]:
    return {f"{m}_cdf": latency_cdf(runs, m, label) for m, label in CDF_METRICS}


# -- turn depth --------------------------------------------------------------------------------


def turn_depth(s: Summary) -> dict[str, str]:
    rows = s.rollups.per_turn_depth
    if not rows:
        return {}
    ttft = svg.line_chart(
        [
            svg.Series("TTFT p50", [(r.turn, r.ttft_ms.p50) for r in rows], svg.PALETTE[0]),
            svg.Series("TTFT p90", [(r.turn, r.ttft_ms.p90) for r in rows], svg.PALETTE[1]),
        ],
        title="TTFT by turn depth",
        x_label="turn (position in its thread)",
        y_label="ms",
        y_format=fmt.num,
        x_format=lambda v: f"{v:.0f}",
        x_integer=True,
        width=500,
    )
    hit = svg.line_chart(
        [
            svg.Series("reported", [(r.turn, r.reported_hit_rate) for r in rows], svg.PALETTE[0]),
            svg.Series(
                "theoretical", [(r.turn, r.theoretical_hit_rate) for r in rows], svg.PALETTE[2]
            ),
        ],
        title="Hit rate by turn depth",
        x_label="turn (position in its thread)",
        y_label="hit rate",
        y_format=fmt.pct,
        tick_format=pct_tick,
        x_format=lambda v: f"{v:.0f}",
        x_integer=True,
        y_max=1.0,
        width=500,
    )
    return {"ttft_by_turn": ttft, "hit_rate_by_turn": hit}


# -- over time ---------------------------------------------------------------------------------


def bucket_width_s(rows: Sequence[SecondRow]) -> int:
    """Seconds per bucket: the smallest of :data:`BUCKETS_S` with at most :data:`MAX_POINTS`
    buckets and :data:`MIN_EVENTS` completions per bucket on average, keeping at least
    :data:`MIN_BUCKETS` buckets."""
    n = len(rows)
    events = sum(r.completed + r.errors for r in rows)
    width = BUCKETS_S[-1]
    for w in BUCKETS_S:
        if n / w <= MAX_POINTS and events * w / max(n, 1) >= MIN_EVENTS:
            width = w
            break
    while width > 1 and math.ceil(n / width) < min(MIN_BUCKETS, n):
        width = max(b for b in BUCKETS_S if b < width)
    return width


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


@dataclass(frozen=True, slots=True)
class Bucket:
    """Seconds ``t_s`` .. ``t_s + width`` of a run: counts as per-second rates."""

    t_s: int
    completed: float
    errors: float
    output_tokens: float
    reported_hit_rate: float | None
    server_hit_rate: float | None
    kv_cache_usage_perc: float | None


def buckets(rows: Sequence[SecondRow], width: int) -> list[Bucket]:
    """Merge per-second rows into ``width``-second buckets: counts become per-second rates, hit
    rates are recomputed from the token sums, server figures averaged over their seconds."""
    out = []
    for i in range(0, len(rows), width):
        part = rows[i : i + width]
        secs = len(part)
        cached = sum(r.cached_tokens or 0 for r in part if r.prompt_tokens is not None)
        prompt = sum(r.prompt_tokens or 0 for r in part)
        server = [r.server_hit_rate for r in part if r.server_hit_rate is not None]
        usage = [r.kv_cache_usage_perc for r in part if r.kv_cache_usage_perc is not None]
        out.append(
            Bucket(
                t_s=part[0].t_s,
                completed=sum(r.completed for r in part) / secs,
                errors=sum(r.errors for r in part) / secs,
                output_tokens=sum(r.output_tokens for r in part) / secs,
                reported_hit_rate=_ratio(cached, prompt),
                server_hit_rate=sum(server) / len(server) if server else None,
                kv_cache_usage_perc=max(usage) if usage else None,
            )
        )
    return out


def over_time(s: Summary) -> dict[str, str]:
    rows = s.rollups.time_series
    if not rows:
        return {}
    width = bucket_width_s(rows)
    b = buckets(rows, width)
    per = "per second" if width == 1 else f"per second, {width} s buckets"
    x_label = "seconds since the first measured request"
    rate = svg.line_chart(
        [
            svg.Series("completed", [(r.t_s, r.completed) for r in b], svg.PALETTE[0]),
            svg.Series(
                "errors",
                [(r.t_s, r.errors if any(x.errors for x in b) else None) for r in b],
                svg.PALETTE[1],
            ),
        ],
        title=f"Requests ({per})",
        x_label=x_label,
        y_label="requests/s",
        y_format=fmt.num,
        width=500,
    )
    tokens = svg.line_chart(
        [svg.Series("output tokens/s", [(r.t_s, r.output_tokens) for r in b], svg.PALETTE[2])],
        title=f"Output tokens ({per})",
        x_label=x_label,
        y_label="tokens/s",
        y_format=fmt.num,
        width=500,
    )
    hit = svg.line_chart(
        [
            svg.Series("reported", [(r.t_s, r.reported_hit_rate) for r in b], svg.PALETTE[0]),
            svg.Series("server /metrics", [(r.t_s, r.server_hit_rate) for r in b], svg.PALETTE[3]),
            svg.Series(
                "KV usage (max)", [(r.t_s, r.kv_cache_usage_perc) for r in b], svg.PALETTE[4]
            ),
        ],
        title=f"Hit rate and KV cache usage ({'per second' if width == 1 else f'{width} s buckets'})",
        x_label=x_label,
        y_label="fraction",
        y_format=fmt.pct,
        tick_format=pct_tick,
        y_max=1.0,
        width=1000,
    )
    return {
        "requests_over_time": rate,
        "output_tokens_over_time": tokens,
        "hit_rate_over_time": hit,
    }


# -- cache and cost ----------------------------------------------------------------------------


def cache_sources(s: Summary) -> dict[str, str]:
    tiers = s.cache.tiers
    parts = [
        (label, float(fraction))
        for key, label in (
            ("local_cache_hit", "GPU hit"),
            ("external_kv_transfer", "offload hit"),
            ("local_compute", "computed"),
        )
        if tiers is not None
        and (part := tiers.part(key)) is not None
        and (fraction := part.fraction) is not None
    ]
    if not parts:
        return {}
    return {"prompt_tokens_by_source": svg.share_bar(parts, title="Prompt tokens by source")}


def margin_curve(cost: Cost) -> list[tuple[float, float | None]]:
    """Gross margin at utilisation 5 %..100 % from a ``cost`` block (its figures scale with U)."""
    hour, revenue, u0 = cost.usd_per_hour, cost.revenue_usd_per_hour, cost.utilization
    if hour is None or not revenue or not u0:
        return []
    full = revenue / u0  # revenue at U = 1
    keep = 1.0 - float(cost.license_fraction or 0.0)
    return [(u / 100, (full * u / 100 * keep - hour) / (full * u / 100)) for u in range(5, 101)]


def cost_charts(s: Summary) -> dict[str, str]:
    cost = s.cost
    if cost is None or cost.utilization is None:
        return {}
    curve = [(u, m if m is not None and m >= MARGIN_FLOOR else None) for u, m in margin_curve(cost)]
    if not any(m is not None for _, m in curve):
        return {}
    here = [(float(cost.utilization), cost.gross_margin)]
    chart = svg.line_chart(
        [
            svg.Series("gross margin", curve, svg.PALETTE[0], markers=False),
            svg.Series("this run's --utilization", here, svg.PALETTE[1]),
        ],
        title="Gross margin vs utilisation (measured token mix)",
        x_label="utilisation (margin below -100 % not drawn)",
        y_label="gross margin",
        y_format=fmt.pct,
        tick_format=pct_tick,
        x_format=pct_tick,
        width=500,
    )
    return {"margin_vs_utilization": chart}


# -- several replicas ---------------------------------------------------------------------------


def replica_charts(s: Summary) -> dict[str, str]:
    """A routed run's replicas side by side: each one's hit rate three ways (an unknown rate
    leaves its bar out) and the requests it got."""
    routing = s.routing
    if routing is None or not routing.per_replica:
        return {}
    per = routing.per_replica

    def name(replica: int) -> str:  # a long row of replicas: the index alone fits under a group
        return f"replica {replica}" if len(per) <= MAX_NAMED_REPLICAS else str(replica)

    hit = svg.bar_chart(
        [
            (
                name(r.replica),
                [
                    ("reported", r.hit_rate),
                    ("/metrics", r.metrics_hit_rate),
                    ("theoretical (own cache)", r.theoretical_hit_rate),
                ],
            )
            for r in per
        ],
        title=f"Hit rate per replica ({routing.policy} routing)",
        y_format=fmt.pct,
        tick_format=pct_tick,
        width=500,
        height=240,
    )
    requests = svg.bar_chart(
        [
            (
                name(r.replica),
                [
                    ("requests", None if r.requests is None else float(r.requests)),
                    ("errors", None if r.errors is None else float(r.errors)),
                ],
            )
            for r in per
        ],
        title="Requests per replica",
        y_format=lambda v: f"{v:,.0f}",
        tick_format=lambda v: f"{v:,.0f}",
        width=500,
        height=240,
        y_integer=True,
    )
    return {"hit_rate_by_replica": hit, "requests_by_replica": requests}


def summary_charts(s: Summary) -> dict[str, str]:
    """Every chart of one run's report, by file-friendly name, in page order."""
    return {
        **latency_cdfs([Run("this run", s)]),
        **cost_charts(s),
        **cache_sources(s),
        **replica_charts(s),
        **turn_depth(s),
        **over_time(s),
    }
