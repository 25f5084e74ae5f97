"""The card's charts: SVG from the report's chart functions (:mod:`agentx.report.svg`), PNG
through the report's renderer (:func:`agentx.report.export.svg_to_png`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from agentx.core.outputs import write_atomic
from agentx.core.percentiles import CURVE_LEVELS, quantile_curve
from agentx.dataset.figures import Measured
from agentx.report.charts import pct_tick
from agentx.report.export import svg_to_png
from agentx.report.svg import Series, bar_chart, line_chart

# name (plots/<name>.png) -> what the card says of it
PLOTS = {
    "input_tokens": "Input sequence length (prompt tokens per request)",
    "output_tokens": "Output sequence length (output tokens per request)",
    "hit_rate_by_turn": "Theoretical prefix-cache hit rate by turn depth (unbounded cache)",
    "think_time_cdf": "Think time between a response and the thread's next request (CDF)",
    "session_length": "Session length (requests per session)",
}


def compact(n: float) -> str:
    """``1536`` -> ``1.5K``, ``2097152`` -> ``2M`` (powers of 1024, as bins of tokens are)."""
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:g}{unit}"
    return f"{n:g}"


def histogram(values: Sequence[float], title: str, what: str) -> str:
    """Counts in power-of-two bins ``[2^k, 2^(k+1))`` (values below 1 in the first), as bars
    labelled by their lower edge."""
    counts: dict[int, int] = {}
    for v in values:
        k = math.floor(math.log2(v)) if v >= 1 else 0
        counts[k] = counts.get(k, 0) + 1
    if not counts:
        return bar_chart([], title=title, width=640)
    ks = range(min(counts), max(counts) + 1)
    groups = [(compact(2**k), [(what, float(counts.get(k, 0)))]) for k in ks]
    return bar_chart(groups, title=title, width=640, height=260, y_format=lambda v: f"{v:,.0f}")


def hit_rate_chart(m: Measured) -> str:
    points = [(float(t.turn), t.hit_rate) for t in m.figures.hit_rate_by_turn]
    series = [Series("hit rate", points, markers=len(points) <= 60)]
    return line_chart(
        series,
        title=PLOTS["hit_rate_by_turn"],
        x_label="turn depth (the k-th request of its thread, from 0)",
        y_label="hit rate",
        y_format=pct_tick,
        tick_format=pct_tick,
        y_max=1.0,
        x_integer=True,
    )


def think_cdf(m: Measured) -> str:
    curve = quantile_curve(m.think_time_s) or []
    points = [(v, level / 100) for v, level in zip(curve, CURVE_LEVELS, strict=False) if v > 0]
    return line_chart(
        [Series("think time", points, markers=False)],
        title=PLOTS["think_time_cdf"],
        x_label="think time (s, log scale)",
        y_label="share of requests",
        y_format=pct_tick,
        tick_format=pct_tick,
        y_max=1.0,
        log_x=True,
    )


def charts(m: Measured) -> dict[str, str]:
    """Every chart of the card as SVG, by name."""
    return {
        "input_tokens": histogram(m.input_tokens, PLOTS["input_tokens"], "requests"),
        "output_tokens": histogram(m.output_tokens, PLOTS["output_tokens"], "requests"),
        "hit_rate_by_turn": hit_rate_chart(m),
        "think_time_cdf": think_cdf(m),
        "session_length": histogram(m.requests_per_session, PLOTS["session_length"], "sessions"),
    }


def write_plots(m: Measured, directory: Path) -> list[Path]:
    """``<name>.png`` of every chart in ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, svg in charts(m).items():
        path = directory / f"{name}.png"
        write_atomic(path, svg_to_png(svg), force=True)
        written.append(path)
    return written
