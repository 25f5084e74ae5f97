"""Number formatting shared by the terminal and HTML reports, and the tables' rows they share
(latency, cost, the comparison's cells and verdict line). Unknown renders as ``n/a``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentx.core.percentiles import P, key
from agentx.report.compare import Verdict, headline_rows, key_label, verdict
from agentx.results.compare import Comparison, MetricRow
from agentx.results.routing import ReplicaFigures
from agentx.results.summary import Summary

NA = "n/a"


def num(v: float | None) -> str:
    """Three significant-ish figures without scientific notation: 1,234 · 56.7 · 0.89."""
    if v is None:
        return NA
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ms(v: float | None) -> str:
    """A latency in milliseconds, switched to seconds from 10 s."""
    if v is None:
        return NA
    if abs(v) >= 10_000:
        return f"{v / 1000:.1f} s"
    return f"{num(v)} ms"


def pct(v: float | None) -> str:
    return NA if v is None else f"{100 * v:.1f}%"


def count(v: int | float | None) -> str:
    return NA if v is None else f"{int(v):,}"


def seconds(v: float | None) -> str:
    return NA if v is None else f"{v:,.1f} s"


# (label, distribution, formatter) of the latency table, terminal and HTML alike
LATENCY_ROWS: tuple[tuple[str, Callable[[Summary], P], Callable[[float | None], str]], ...] = (
    ("TTFT", lambda s: s.latency_ms.ttft, ms),
    ("TTFC", lambda s: s.latency_ms.ttfc, ms),
    ("ITL", lambda s: s.latency_ms.itl, ms),
    ("TPOT", lambda s: s.latency_ms.tpot, ms),
    ("E2E", lambda s: s.latency_ms.e2e, ms),
    ("output tok/s per user", lambda s: s.per_user_output_tokens_per_s, num),
    ("dispatch lag", lambda s: s.schedule.dispatch_lag_ms, ms),
)


def stat_columns(summary: Summary) -> list[str]:
    """The columns of the latency table: every ``pNN`` the run reports (``--percentiles`` adds
    some), in ascending order, then ``mean`` and ``max``."""
    levels = {q for _, dist, _ in LATENCY_ROWS for q, _ in dist(summary).levels}
    return [*(key(q) for q in sorted(levels)), "mean", "max"]


def slo_format(unit: str | None) -> Callable[[float | None], str]:
    """How a ``--slo`` check's threshold and value print, by the check's unit."""
    return ms if unit == "ms" else pct if unit == "fraction" else num


def usd(v: float | None) -> str:
    """Dollars: $1,234 · $12.3 · $0.456 · $0.00123."""
    if v is None:
        return NA
    sign, a = ("-" if v < 0 else ""), abs(v)
    if a >= 100:
        return f"{sign}${a:,.0f}"
    if a >= 1:
        return f"{sign}${a:,.2f}"
    if a == 0:
        return "$0"
    return f"{sign}${a:.3g}"


def cost_rows(summary: Summary) -> list[tuple[str, str]]:
    """The ``cost`` block as (label, value) rows, terminal and HTML alike; empty without one."""
    c = summary.cost
    if c is None:
        return []
    rows: list[tuple[str, str]] = []
    parts = c.gpu_hour_parts
    detail = ""
    if parts is not None:
        detail = (
            f" (capex {usd(parts.capex_usd_per_hour)} + power {usd(parts.power_usd_per_hour)}"
            f" + hosting {usd(parts.hosting_usd_per_hour)})"
        )
    rows.append(("cost per accelerator-hour", usd(c.usd_per_gpu_hour) + detail))
    rows.append(
        (
            "deployment cost",
            f"{c.gpus} x {usd(c.usd_per_gpu_hour)} = {usd(c.usd_per_hour)}/h"
            if c.usd_per_hour is not None
            else NA,
        )
    )
    rows.append(("utilisation (share of the hour under this load)", pct(c.utilization)))
    for kind, v in (
        ("input", c.usd_per_million_input_tokens),
        ("output", c.usd_per_million_output_tokens),
        ("total", c.usd_per_million_total_tokens),
    ):
        rows.append((f"cost per million {kind} tokens", usd(v)))
    price = c.price_usd_per_million_tokens
    if price is not None:
        name = f" ({price.preset})" if price.preset else ""
        rows.append(
            (
                "price per million tokens" + name,
                f"input {usd(price.input)} · cached {usd(price.cached)} · "
                f"output {usd(price.output)}",
            )
        )
        fraction = None if c.token_mix is None else c.token_mix.cached_fraction
        rows.append(("cached share of input (priced as cached)", pct(fraction)))
        rows.append(("revenue per accelerator-hour", usd(c.revenue_usd_per_gpu_hour)))
        rows.append(
            (
                f"licence fee ({pct(c.license_fraction)} of revenue)",
                f"{usd(c.license_usd_per_hour)}/h",
            )
        )
        rows.append(("gross profit", f"{usd(c.gross_profit_usd_per_hour)}/h"))
        rows.append(("gross margin", pct(c.gross_margin)))
        rows.append(("break-even utilisation", pct(c.breakeven_utilization)))
    return rows


def cost_notes(summary: Summary) -> list[str]:
    return [] if summary.cost is None else list(summary.cost.notes)


def _fmt_for(key: str) -> Any:
    if key.startswith(("latency_ms.", "schedule.")):
        return ms
    if key.startswith("cost.usd"):
        return usd
    if key.startswith("cache.") or key.endswith(("fraction", "margin")):
        return pct
    if key.startswith("requests."):
        return count
    return num


def compare_cells(row: MetricRow) -> tuple[str, str, str, str]:
    """Base, new, delta and ratio of one ``agentx.compare/1`` row, formatted for its unit."""
    f = _fmt_for(row.key)
    delta = row.delta
    if delta is None:
        d = NA
    elif f is pct:
        d = f"{100 * delta:+.1f} pt"
    elif f is count:
        d = f"{int(delta):+,}"
    else:
        d = ("+" if delta > 0 else "") + f(delta)
    ratio = NA if row.ratio is None else f"{row.ratio:.2f}x"
    return f(row.base), f(row.new), d, ratio


UP, DOWN, LEVEL = "▲", "▼", "="
COMPARE_LEGEND = (
    "▲/▼ the figure rose/fell · better/worse: by more than 1% · ratio = new / base · "
    "the theoretical hit rate is the trace's, never better or worse"
)


def change(row: MetricRow) -> str:
    """The change of a row in an arrow and a word (``▲ worse``, ``▼ better``, ``= same``): it
    reads without colour and through a pipe."""
    if row.change is None or row.delta is None:
        return NA
    if row.change == "same":
        return f"{LEVEL} same"
    return f"{UP if row.delta > 0 else DOWN} {row.change}"


def _moved(row: MetricRow) -> str:
    """How far a headline figure moved: points for a rate, per cent of the base otherwise."""
    delta = row.delta or 0.0
    if _fmt_for(row.key) is pct:
        return f"{100 * delta:+.1f} pt"
    if row.ratio is not None:
        return f"{100 * (row.ratio - 1):+.0f}%"
    return compare_cells(row)[2]


def verdict_line(cmp: Comparison) -> str:
    """The comparison in one line: the verdict over the headline figures, how many moved which
    way, and the two largest moves (``worse (4 worse, 0 better, 3 same of 7 headline figures):
    TTFT p99 ▲ +60%, ...``)."""
    v = verdict(cmp)
    if v is Verdict.UNKNOWN:
        return "unknown: no headline figure is known in both runs"
    rows = [r for r in headline_rows(cmp) if r.better != "neutral"]
    n = {c: sum(1 for r in rows if r.change == c) for c in ("better", "worse", "same")}
    line = (
        f"{v} ({n['worse']} worse, {n['better']} better, {n['same']} same of "
        f"{sum(n.values())} headline figures)"
    )
    moved = [r for r in rows if r.change in ("better", "worse")]
    moved.sort(key=lambda r: abs((r.ratio or 2.0) - 1), reverse=True)  # no ratio: from 0
    shown = [f"{key_label(r.key)} {change(r).split()[0]} {_moved(r)}" for r in moved[:2]]
    return line + (f": {', '.join(shown)}" if shown else "")


def config_warnings(cmp: Comparison) -> list[str]:
    """One line when the compared runs were configured differently, naming what differs."""
    diffs = cmp.config_differences
    if not diffs:
        return []
    shown = "; ".join(f"{d.key} {d.base!r} -> {d.new!r}" for d in diffs[:MAX_DIFFS_SHOWN])
    more = f" (and {len(diffs) - MAX_DIFFS_SHOWN} more)" if len(diffs) > MAX_DIFFS_SHOWN else ""
    return [f"the runs were configured differently: {shown}{more}"]


MAX_DIFFS_SHOWN = 8


# -- a run over several replicas: its routing block, terminal and HTML alike ----------------------


def points(v: float | None) -> str:
    return NA if v is None else f"{v:.1f} pts"


def _s_as_ms(v: float | None) -> str:
    return ms(None if v is None else v * 1000)


# every figure of a replica, by column header; the terminal shows REPLICA_COLUMNS of them
REPLICA_CELLS: tuple[tuple[str, Callable[[ReplicaFigures], str]], ...] = (
    ("requests", lambda r: count(r.requests)),
    ("errors", lambda r: count(r.errors)),
    ("prompt tokens", lambda r: count(r.prompt_tokens)),
    ("hit rate: reported", lambda r: pct(r.hit_rate)),
    ("/metrics", lambda r: pct(r.metrics_hit_rate)),
    ("theoretical", lambda r: pct(r.theoretical_hit_rate)),
    ("eviction loss", lambda r: points(r.eviction_loss_points)),
    ("TTFT p50", lambda r: _s_as_ms(r.ttft_p50_s)),
    ("TTFT p90", lambda r: _s_as_ms(r.ttft_p90_s)),
    ("TTFT p99", lambda r: _s_as_ms(r.ttft_p99_s)),
    ("ITL p50", lambda r: _s_as_ms(r.itl_p50_s)),
    ("ITL p90", lambda r: _s_as_ms(r.itl_p90_s)),
    ("KV peak", lambda r: pct(r.kv_usage_peak)),
)
REPLICA_PAGE_COLUMNS = tuple(h for h, _ in REPLICA_CELLS)
REPLICA_COLUMNS = (
    "requests",
    "errors",
    "hit rate: reported",
    "/metrics",
    "theoretical",
    "eviction loss",
    "TTFT p50",
    "TTFT p90",
    "ITL p50",
    "KV peak",
)


def replica_rows(
    summary: Summary, columns: Sequence[str] = REPLICA_COLUMNS
) -> list[tuple[str, list[str]]]:
    """Each replica's label (its index and endpoint) and cells under ``columns`` (headers of
    :data:`REPLICA_CELLS`)."""
    routing = summary.routing
    if routing is None:
        return []
    cells = dict(REPLICA_CELLS)
    return [
        (
            f"{r.replica}: {r.endpoint}" if r.endpoint else str(r.replica),
            [cells[c](r) for c in columns],
        )
        for r in routing.per_replica
    ]


def routing_lines(summary: Summary) -> list[str]:
    """The policy, the routing loss and the imbalance, in words."""
    routing = summary.routing
    if routing is None:
        return []
    im = routing.imbalance
    return [
        f"routing {routing.policy} over {routing.replicas} replicas: routing loss "
        f"{points(routing.loss_points)} (one shared cache {pct(routing.theoretical_hit_rate)}, "
        f"each replica's own {pct(routing.replica_theoretical_hit_rate)})",
        f"imbalance: requests max/mean {num(im.requests_max_over_mean)}, CV "
        f"{num(im.requests_cv)}; prompt tokens max/mean {num(im.prompt_tokens_max_over_mean)}, "
        f"CV {num(im.prompt_tokens_cv)}",
    ]
