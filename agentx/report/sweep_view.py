"""A sweep directory (``agentx sweep -o DIR``) as data, charts, a table and a page.

``DIR/sweep.json`` (``agentx.sweep/1``) lists one point per level, each pointing at the level's
own results directory (``c{N}/``; ``POLICY/`` or ``POLICY-c{N}/`` in a sweep over routing
policies). This module turns a level's ``summary.json`` into its point, draws the
throughput-interactivity curve (total output tokens/s against per-user output tokens/s, each
point labelled with its concurrency, one curve per policy), TTFT and the prefix-cache hit rate
against concurrency, in a sweep over policies the hit rates and TTFT per policy side by side,
and, when the runs carry a ``cost`` block, cost per million output tokens against
interactivity (InferenceX's Pareto view). ``agentx report DIR`` re-renders a sweep from these
files alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

import orjson

from agentx.core.errors import AgentxError, ShapeError
from agentx.core.urls import redact_urls_deep
from agentx.report import fmt, svg
from agentx.report.page import page, table
from agentx.results.summary import Summary
from agentx.results.sweep import SCHEMA, PointRouting, Sweep, SweepPoint

SWEEP_JSON = "sweep.json"


def _routed(get: Callable[[PointRouting], Any]) -> Callable[[SweepPoint], Any]:
    """A routed level's figure (``None`` for a level of one server)."""
    return lambda p: None if p.routing is None else get(p.routing)


def sweep_point(concurrency: int, summary: Summary, results_dir: str | None = None) -> SweepPoint:
    """One point of ``agentx.sweep/1`` from one level's ``summary.json`` (``results_dir``: the
    level's directory under the sweep's, ``c{N}`` when not given)."""
    cost = summary.cost
    routing = summary.routing
    return SweepPoint(
        concurrency=concurrency,
        requests_per_s=summary.throughput.requests_per_s,
        output_tokens_per_s=summary.throughput.output_tokens_per_s,
        per_user_output_tokens_per_s_p50=summary.per_user_output_tokens_per_s.p50,
        ttft_ms_p50=summary.latency_ms.ttft.p50,
        ttft_ms_p99=summary.latency_ms.ttft.p99,
        itl_ms_p50=summary.latency_ms.itl.p50,
        hit_rate_reported=summary.cache.reported_hit_rate,
        hit_rate_theoretical=summary.cache.theoretical_hit_rate,
        errors=summary.requests.errors,
        requests=summary.requests.total,
        duration_s=summary.duration_s,
        client_saturated=summary.client.saturated,
        results_dir=results_dir or f"c{concurrency}",
        usd_per_million_output_tokens=None if cost is None else cost.usd_per_million_output_tokens,
        usd_per_million_total_tokens=None if cost is None else cost.usd_per_million_total_tokens,
        gross_margin=None if cost is None else cost.gross_margin,
        routing=None
        if routing is None
        else PointRouting(
            routing.policy,
            summary.latency_ms.ttft.p90,
            routing.loss_points,
            routing.replica_theoretical_hit_rate,
            routing.imbalance.requests_max_over_mean,
            routing.imbalance.prompt_tokens_max_over_mean,
        ),
    )


def is_sweep_dir(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return p.is_dir() and (p / SWEEP_JSON).is_file() and not (p / "summary.json").exists()


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """``DIR/sweep.json``, checked to be an ``agentx.sweep/1``."""
    f = Path(path) / SWEEP_JSON
    try:
        data = orjson.loads(f.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise AgentxError(f"{f}: unreadable: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise AgentxError(f"{f}: not an {SCHEMA} file")
    try:
        # redacted: a sweep.json written before URLs were redacted
        return Sweep.from_json(redact_urls_deep(data))
    except ShapeError as exc:
        raise ShapeError(f"{f}: not an {SCHEMA} file ({exc})") from None


# -- charts ------------------------------------------------------------------------------------


def _by_level(data: Sweep) -> list[SweepPoint]:
    return sorted(data.points, key=lambda p: p.concurrency)


def over_routes(data: Sweep) -> bool:
    """Whether the sweep compares routing policies (``--route`` with several)."""
    return len(data.routes) > 1


def _groups(data: Sweep) -> list[tuple[str | None, list[SweepPoint]]]:
    """The curves a chart draws: one per policy in a sweep over policies, else one of every
    level; each in concurrency order."""
    if not over_routes(data):
        return [(None, _by_level(data))]
    return [(r, [p for p in _by_level(data) if p.route == r]) for r in data.routes]


def _curve(
    points: list[SweepPoint], y: Callable[[SweepPoint], float | None]
) -> tuple[list[tuple[float, float | None]], list[str]]:
    pts = [
        (x, v, p.concurrency)
        for p in points
        if (x := p.per_user_output_tokens_per_s_p50) is not None and (v := y(p)) is not None
    ]
    return [(x, v) for x, v, _ in pts], [f"c{c}" for _, _, c in pts]


def _colour(i: int) -> str:
    return svg.PALETTE[i % len(svg.PALETTE)]


PointFigure = Callable[[SweepPoint], float | None]


def _per_route(
    groups: list[tuple[str | None, list[SweepPoint]]],
    lines: tuple[tuple[str, PointFigure, bool], ...],
) -> list[svg.Series]:
    """One series per policy and line (name, figure, dashed), each policy in its colour."""
    return [
        svg.Series(f"{route} {name}", xy, _colour(i), dash=dash)
        for i, (route, pts) in enumerate(groups)
        for name, get, dash in lines
        if (xy := [(p.concurrency, v) for p in pts if (v := get(p)) is not None])
    ]


def sweep_charts(data: Sweep, width: int = 490, height: int = 280) -> dict[str, str]:
    """The sweep's charts by name: throughput and cost against interactivity, TTFT and the
    prefix-cache hit rate (reported and theoretical) against concurrency; in a sweep over
    routing policies one curve per policy, and the hit rates and TTFT per policy as bars."""
    groups = _groups(data)
    routed = over_routes(data)

    def by_policy(y: PointFigure, colour: int = 0) -> list[svg.Series]:
        out = []
        for i, (route, pts) in enumerate(groups):
            xy, labels = _curve(pts, y)
            name = route if route is not None else "one point per concurrency level (cN)"
            out.append(svg.Series(name, xy, _colour(i + colour), labels))
        return out

    out = {
        "throughput_vs_interactivity": svg.line_chart(
            by_policy(lambda p: p.output_tokens_per_s),
            title="Throughput vs interactivity",
            x_label="per-user output tokens/s (p50)",
            y_label="output tokens/s (total)",
            y_format=lambda v: f"{v:,.0f} tok/s",
            width=width,
            height=height,
        )
    }
    pts = _by_level(data)
    levels = sorted(data.levels)
    log = bool(levels) and min(levels) > 0 and max(levels) / min(levels) >= 8
    by_level: dict[str, Any] = {  # the x axis of every chart against concurrency
        "x_label": "concurrency (session lanes" + (", log scale)" if log else ")"),
        "x_format": lambda v: f"{v:g}",
        "x_ticks": levels,
        "log_x": log,
        "width": width,
        "height": height,
    }
    hit_lines: tuple[tuple[str, PointFigure, str], ...] = (
        ("reported by the server", lambda p: p.hit_rate_reported, svg.PALETTE[0]),
        ("theoretical (unbounded cache)", lambda p: p.hit_rate_theoretical, svg.PALETTE[1]),
    )
    if not routed:
        ttft = [
            svg.Series("TTFT p50", [(p.concurrency, p.ttft_ms_p50) for p in pts]),
            svg.Series("TTFT p99", [(p.concurrency, p.ttft_ms_p99) for p in pts], svg.PALETTE[1]),
        ]
        hits = [
            svg.Series(name, xy, colour)
            for name, get, colour in hit_lines
            if (xy := [(p.concurrency, v) for p in pts if (v := get(p)) is not None])
        ]
    elif len(levels) > 1:
        ttft = _per_route(
            groups,
            (
                ("TTFT p50", lambda p: p.ttft_ms_p50, False),
                ("p90", _routed(lambda r: r.ttft_ms_p90), True),
            ),
        )
        hits = _per_route(
            groups,
            (
                ("reported", lambda p: p.hit_rate_reported, False),
                ("replicas' theoretical", _routed(lambda r: r.hit_rate_replica_theoretical), True),
            ),
        )
    else:  # one level per policy: the bars below say it all
        ttft, hits = [], []
    if ttft:
        out["ttft_vs_concurrency"] = svg.line_chart(
            ttft,
            title="Time to first token vs concurrency",
            y_label="TTFT (ms)",
            y_format=lambda v: f"{v:,.1f} ms",
            **by_level,
        )
    if hits:  # the gap between the lines is what the server's KV capacity lost at each level
        out["hit_rate_vs_concurrency"] = svg.line_chart(
            hits,
            title="Prefix-cache hit rate vs concurrency",
            y_label="hit rate",
            y_format=lambda v: f"{v:.1%}",
            tick_format=lambda v: f"{v:.0%}",
            y_max=1.0,
            **by_level,
        )
    if routed:
        out.update(_route_bars(data, width, height))
    if data.has_cost:
        out["cost_vs_interactivity"] = svg.line_chart(
            by_policy(lambda p: p.usd_per_million_output_tokens, colour=2),
            title="Cost per million output tokens vs interactivity",
            x_label="per-user output tokens/s (p50)",
            y_label="USD per million output tokens",
            y_format=fmt.usd,
            tick_format=lambda v: f"${v:,g}",
            width=width,
            height=height,
        )
    return out


def _route_bars(data: Sweep, width: int, height: int) -> dict[str, str]:
    """A sweep over policies: per policy (and level), the hit rates (what the server reported,
    what each replica's own unbounded cache could hit, what one shared cache could: the last
    two's gap is the routing loss) and TTFT p50 / p90."""
    one_level = len(data.levels) == 1
    routed = [(p, p.routing) for p in data.points if p.routing is not None]
    hits, ttft = [], []
    for p, r in sorted(routed, key=lambda pr: (data.routes.index(pr[1].route), pr[0].concurrency)):
        name = r.route if one_level else p.label
        hits.append(
            (
                name,
                (
                    ("reported", p.hit_rate_reported),
                    ("theoretical per replica", r.hit_rate_replica_theoretical),
                    ("theoretical shared", p.hit_rate_theoretical),
                ),
            )
        )
        ttft.append((name, (("TTFT p50", p.ttft_ms_p50), ("TTFT p90", r.ttft_ms_p90))))
    return {
        "hit_rate_by_route": svg.bar_chart(
            hits,
            title="Prefix-cache hit rate per routing policy",
            y_format=lambda v: f"{v:.1%}",
            tick_format=lambda v: f"{v:.0%}",
            width=width,
            height=height,
        ),
        "ttft_by_route": svg.bar_chart(
            ttft,
            title="Time to first token per routing policy (ms)",
            y_format=lambda v: f"{v:,.1f} ms",
            width=width,
            height=height,
        ),
    }


STYLE = f"<style>text{{font-family:system-ui,sans-serif}}{svg.CHART_CSS}</style>"


def sweep_svg(data: Sweep) -> str:
    """The sweep's charts stacked in one standalone SVG (``sweep.svg``)."""
    w, h = 560, 280
    charts = list(sweep_charts(data, w, h).values())
    body = "".join(
        f'<g transform="translate(0,{i * (h + 16)})">{c}</g>' for i, c in enumerate(charts)
    )
    total = len(charts) * (h + 16)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {total}" width="{w}" '
        f'height="{total}">{STYLE}<rect width="100%" height="100%" fill="#fff"/>{body}</svg>\n'
    )


# -- table and page ----------------------------------------------------------------------------


def _f(spec: str) -> Callable[[Any], str]:
    return lambda v: "-" if v is None else format(v, spec)


Column = tuple[str, Callable[[SweepPoint], Any], Callable[[Any], str]]  # head, figure, format
COLUMNS: tuple[Column, ...] = (
    ("lanes", lambda p: p.concurrency, str),
    ("req/s", lambda p: p.requests_per_s, _f(",.2f")),
    ("out tok/s", lambda p: p.output_tokens_per_s, _f(",.1f")),
    ("tok/s/user\np50", lambda p: p.per_user_output_tokens_per_s_p50, _f(",.1f")),
    ("TTFT ms\np50", lambda p: p.ttft_ms_p50, _f(",.1f")),
    ("TTFT ms\np99", lambda p: p.ttft_ms_p99, _f(",.1f")),
    ("ITL ms\np50", lambda p: p.itl_ms_p50, _f(",.2f")),
    ("hit rate\nreported", lambda p: p.hit_rate_reported, _f(".1%")),
    ("hit rate\ntheory", lambda p: p.hit_rate_theoretical, _f(".1%")),
    ("errors", lambda p: p.errors, str),
)
ROUTE_COLUMN: Column = ("route", lambda p: p.route, lambda v: "-" if v is None else str(v))
ROUTING_COLUMNS: tuple[Column, ...] = (
    ("TTFT ms\np90", _routed(lambda r: r.ttft_ms_p90), _f(",.1f")),
    ("hit rate\nreplicas", _routed(lambda r: r.hit_rate_replica_theoretical), _f(".1%")),
    ("routing\nloss pts", _routed(lambda r: r.routing_loss_points), _f(".2f")),
    ("req max\n/mean", _routed(lambda r: r.imbalance_requests_max_over_mean), _f(".2f")),
)
COST_COLUMNS: tuple[Column, ...] = (
    ("$/M out\ntokens", lambda p: p.usd_per_million_output_tokens, fmt.usd),
    ("margin", lambda p: p.gross_margin, fmt.pct),
)


def columns(data: Sweep) -> tuple[Column, ...]:
    cols = (ROUTE_COLUMN, *COLUMNS, *ROUTING_COLUMNS) if data.routes else COLUMNS
    return cols + COST_COLUMNS if data.has_cost else cols


def title(data: Sweep) -> str:
    return f"sweep of {data.trace} against {data.endpoint} ({data.model})"


def render_table(data: Sweep) -> Any:
    """A rich table: one row per level."""
    from agentx.core.tables import Table

    t = Table(title=title(data))
    cols = columns(data)
    for head, _, _ in cols:
        t.add_column(head, justify="right")
    for p in data.points:
        t.add_row(*(f(figure(p)) for _, figure, f in cols))
    return t


def render_sweep_html(data: Sweep, source: str | None = None) -> str:
    """The sweep's page: its charts, its table, and a link to each level's own report."""
    cols = columns(data)
    rows = []
    for p in data.points:
        cells = [escape(f(figure(p))) for _, figure, f in cols]
        link = f"{p.results_dir}/report.html"
        cells.append(f"<a href='{escape(link)}'>{escape(link)}</a>")
        rows.append(cells)
    charts = "".join(sweep_charts(data).values())
    body = (
        f"<h1>agentx sweep</h1><div class='meta'>{escape(title(data))}</div>"
        f"<h2>Curves</h2><div class='charts'>{charts}</div>"
        "<h2>Levels</h2>"
        + table([h.replace("\n", " ") for h, _, _ in cols] + ["report"], rows, raw=True)
        + "<p class='note'>Each level is an ordinary replay: its results directory holds "
        "summary.json, requests.parquet and report.html.</p>"
    )
    return page("agentx sweep", body, source)
