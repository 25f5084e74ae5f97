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

from agentx.core.errors import AgentxError
from agentx.core.urls import redact_urls_deep
from agentx.report import fmt, svg
from agentx.report.html import page, table

SCHEMA = "agentx.sweep/1"
SWEEP_JSON = "sweep.json"
POINT_KEYS = (
    "concurrency",
    "requests_per_s",
    "output_tokens_per_s",
    "per_user_output_tokens_per_s_p50",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "itl_ms_p50",
    "hit_rate_reported",
    "hit_rate_theoretical",
    "errors",
)
COST_KEYS = ("usd_per_million_output_tokens", "usd_per_million_total_tokens", "gross_margin")


def sweep_point(concurrency: int, summary: dict[str, Any]) -> dict[str, Any]:
    """One point of ``agentx.sweep/1`` from one level's ``summary.json``."""
    g = fmt.get
    return {
        "concurrency": concurrency,
        "requests_per_s": g(summary, "throughput.requests_per_s"),
        "output_tokens_per_s": g(summary, "throughput.output_tokens_per_s"),
        "per_user_output_tokens_per_s_p50": g(summary, "per_user_output_tokens_per_s.p50"),
        "ttft_ms_p50": g(summary, "latency_ms.ttft.p50"),
        "ttft_ms_p99": g(summary, "latency_ms.ttft.p99"),
        "itl_ms_p50": g(summary, "latency_ms.itl.p50"),
        "hit_rate_reported": g(summary, "cache.reported_hit_rate"),
        "hit_rate_theoretical": g(summary, "cache.theoretical_hit_rate"),
        "errors": g(summary, "requests.errors"),
        # extras
        "requests": g(summary, "requests.total"),
        "duration_s": summary.get("duration_s"),
        "client_saturated": g(summary, "client.saturated"),
        "results_dir": f"c{concurrency}",
        **{k: g(summary, f"cost.{k}") for k in COST_KEYS},
    }


def is_sweep_dir(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return p.is_dir() and (p / SWEEP_JSON).is_file() and not (p / "summary.json").exists()


def load_sweep(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``DIR/sweep.json``, checked to be an ``agentx.sweep/1``."""
    f = Path(path) / SWEEP_JSON
    try:
        data = orjson.loads(f.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise AgentxError(f"{f}: unreadable: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise AgentxError(f"{f}: not an {SCHEMA} file")
    return redact_urls_deep(data)  # a sweep.json written before URLs were redacted


def has_cost(data: dict[str, Any]) -> bool:
    return any(p.get("usd_per_million_output_tokens") is not None for p in data["points"])


# -- charts ------------------------------------------------------------------------------------


def _by_level(data: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(data["points"], key=lambda p: p["concurrency"])


def _curve(data: dict[str, Any], y_key: str) -> tuple[list[tuple[float, float | None]], list[str]]:
    pts = [
        p
        for p in _by_level(data)
        if p["per_user_output_tokens_per_s_p50"] is not None and p.get(y_key) is not None
    ]
    return (
        [(p["per_user_output_tokens_per_s_p50"], p[y_key]) for p in pts],
        [f"c{p['concurrency']}" for p in pts],
    )


def sweep_charts(data: dict[str, Any], width: int = 490, height: int = 280) -> dict[str, str]:
    """The sweep's charts by name: throughput and cost against interactivity, TTFT."""
    xy, labels = _curve(data, "output_tokens_per_s")
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
    levels = [p["concurrency"] for p in pts]
    log = bool(levels) and min(levels) > 0 and max(levels) / min(levels) >= 8
    out["ttft_vs_concurrency"] = svg.line_chart(
        [
            svg.Series("TTFT p50", [(p["concurrency"], p["ttft_ms_p50"]) for p in pts]),
            svg.Series(
                "TTFT p99", [(p["concurrency"], p["ttft_ms_p99"]) for p in pts], svg.PALETTE[1]
            ),
        ],
        title="Time to first token vs concurrency",
        x_label="concurrency (session lanes" + (", log scale)" if log else ")"),
        y_label="TTFT (ms)",
        y_format=lambda v: f"{v:,.1f} ms",
        x_format=lambda v: f"{v:g}",
        x_ticks=levels,
        log_x=log,
        width=width,
        height=height,
    )
    if has_cost(data):
        xy, labels = _curve(data, "usd_per_million_output_tokens")
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


def sweep_svg(data: dict[str, Any]) -> str:
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


COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("lanes", "concurrency", str),
    ("req/s", "requests_per_s", _f(",.2f")),
    ("out tok/s", "output_tokens_per_s", _f(",.1f")),
    ("tok/s/user\np50", "per_user_output_tokens_per_s_p50", _f(",.1f")),
    ("TTFT ms\np50", "ttft_ms_p50", _f(",.1f")),
    ("TTFT ms\np99", "ttft_ms_p99", _f(",.1f")),
    ("ITL ms\np50", "itl_ms_p50", _f(",.2f")),
    ("hit rate\nreported", "hit_rate_reported", _f(".1%")),
    ("hit rate\ntheory", "hit_rate_theoretical", _f(".1%")),
    ("errors", "errors", str),
)
COST_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("$/M out\ntokens", "usd_per_million_output_tokens", fmt.usd),
    ("margin", "gross_margin", fmt.pct),
)


def columns(data: dict[str, Any]) -> tuple[tuple[str, str, Callable[[Any], str]], ...]:
    return COLUMNS + COST_COLUMNS if has_cost(data) else COLUMNS


def title(data: dict[str, Any]) -> str:
    return f"sweep of {data['trace']} against {data['endpoint']} ({data.get('model')})"


def render_table(data: dict[str, Any]) -> Any:
    """A rich table: one row per level."""
    from rich.table import Table

    t = Table(title=title(data), header_style="bold", show_edge=False)
    cols = columns(data)
    for head, _, _ in cols:
        t.add_column(head, justify="right")
    for p in data["points"]:
        t.add_row(*(f(p.get(key)) for _, key, f in cols))
    return t


def render_sweep_html(data: dict[str, Any]) -> str:
    """The sweep's page: its charts, its table, and a link to each level's own report."""
    cols = columns(data)
    rows = []
    for p in data["points"]:
        cells = [escape(f(p.get(key))) for _, key, f in cols]
        link = f"{p['results_dir']}/report.html"
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
    return page("agentx sweep", body)
