"""A sweep directory (``agentx sweep -o DIR``) as data, charts, a table and a page.

``DIR/sweep.json`` (``agentx.sweep/1``) lists one point per concurrency level, each pointing at
the level's own results directory (``c{N}/``). This module turns a level's ``summary.json`` into
its point, draws the throughput-interactivity curve (total output tokens/s against per-user output
tokens/s, each point labelled with its concurrency), TTFT against concurrency and, when the runs
carry a ``cost`` block, cost per million output tokens against interactivity (InferenceX's Pareto
view). ``agentx report DIR`` re-renders a sweep from these files alone.
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
from agentx.report.html import page, table
from agentx.results.summary import Summary
from agentx.results.sweep import SCHEMA, Sweep, SweepPoint

SWEEP_JSON = "sweep.json"


def sweep_point(concurrency: int, summary: Summary) -> SweepPoint:
    """One point of ``agentx.sweep/1`` from one level's ``summary.json``."""
    cost = summary.cost
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
        results_dir=f"c{concurrency}",
        usd_per_million_output_tokens=None if cost is None else cost.usd_per_million_output_tokens,
        usd_per_million_total_tokens=None if cost is None else cost.usd_per_million_total_tokens,
        gross_margin=None if cost is None else cost.gross_margin,
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


def _curve(
    data: Sweep, y: Callable[[SweepPoint], float | None]
) -> tuple[list[tuple[float, float | None]], list[str]]:
    pts = [
        (x, v, p.concurrency)
        for p in _by_level(data)
        if (x := p.per_user_output_tokens_per_s_p50) is not None and (v := y(p)) is not None
    ]
    return [(x, v) for x, v, _ in pts], [f"c{c}" for _, _, c in pts]


def sweep_charts(data: Sweep, width: int = 490, height: int = 280) -> dict[str, str]:
    """The sweep's charts by name: throughput and cost against interactivity, TTFT and the
    prefix-cache hit rate (reported and theoretical) against concurrency."""
    xy, labels = _curve(data, lambda p: p.output_tokens_per_s)
    out = {
        "throughput_vs_interactivity": svg.line_chart(
            [svg.Series("one point per concurrency level (cN)", xy, labels=labels)],
            title="Throughput vs interactivity",
            x_label="per-user output tokens/s (p50)",
            y_label="output tokens/s (total)",
            y_format=lambda v: f"{v:,.0f} tok/s",
            width=width,
            height=height,
        )
    }
    pts = _by_level(data)
    levels = [p.concurrency for p in pts]
    log = bool(levels) and min(levels) > 0 and max(levels) / min(levels) >= 8
    by_level: dict[str, Any] = {  # the x axis of every chart against concurrency
        "x_label": "concurrency (session lanes" + (", log scale)" if log else ")"),
        "x_format": lambda v: f"{v:g}",
        "x_ticks": levels,
        "log_x": log,
        "width": width,
        "height": height,
    }
    out["ttft_vs_concurrency"] = svg.line_chart(
        [
            svg.Series("TTFT p50", [(p.concurrency, p.ttft_ms_p50) for p in pts]),
            svg.Series("TTFT p99", [(p.concurrency, p.ttft_ms_p99) for p in pts], svg.PALETTE[1]),
        ],
        title="Time to first token vs concurrency",
        y_label="TTFT (ms)",
        y_format=lambda v: f"{v:,.1f} ms",
        **by_level,
    )
    lines: tuple[tuple[str, Callable[[SweepPoint], float | None], str], ...] = (
        ("reported by the server", lambda p: p.hit_rate_reported, svg.PALETTE[0]),
        ("theoretical (unbounded cache)", lambda p: p.hit_rate_theoretical, svg.PALETTE[1]),
    )
    hits = [
        svg.Series(name, xy, colour)
        for name, get, colour in lines
        if (xy := [(p.concurrency, v) for p in pts if (v := get(p)) is not None])
    ]
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
    if data.has_cost:
        xy, labels = _curve(data, lambda p: p.usd_per_million_output_tokens)
        out["cost_vs_interactivity"] = svg.line_chart(
            [svg.Series("one point per concurrency level (cN)", xy, svg.PALETTE[2], labels)],
            title="Cost per million output tokens vs interactivity",
            x_label="per-user output tokens/s (p50)",
            y_label="USD per million output tokens",
            y_format=fmt.usd,
            tick_format=lambda v: f"${v:,g}",
            width=width,
            height=height,
        )
    return out


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
COST_COLUMNS: tuple[Column, ...] = (
    ("$/M out\ntokens", lambda p: p.usd_per_million_output_tokens, fmt.usd),
    ("margin", lambda p: p.gross_margin, fmt.pct),
)


def columns(data: Sweep) -> tuple[Column, ...]:
    return COLUMNS + COST_COLUMNS if data.has_cost else COLUMNS


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
