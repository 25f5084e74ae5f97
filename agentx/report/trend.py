"""``agentx report RUN... --trend``: many runs of one benchmark as a trend. Each headline figure
is drawn over the runs (oldest first), one line per series of runs that share their labels
(``--label engine=vllm-0.32``: the labels whose value differs between the runs make the
series); a throughput–interactivity chart across the runs marks the ones on its frontier (the
InferenceX view: no other run is both faster per user and delivers more per GPU). Runs of
different traces (their fingerprints) are drawn with a warning: their figures do not compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import orjson
from rich.console import RenderableType

from agentx.core.errors import UsageError
from agentx.core.outputs import write_atomic
from agentx.core.tables import table as text_table
from agentx.formats.fingerprint import short
from agentx.metrics.cost import CostOptions
from agentx.metrics.summary import with_cost
from agentx.report import export, fmt, svg
from agentx.report.page import page, table
from agentx.report.results_dir import load_summary
from agentx.results.summary import Summary
from agentx.results.trend import Trend, TrendPoint

TREND_FILE = "trend.json"
ALL_RUNS = "all runs"


def _point(path: Path, s: Summary, group_by: Sequence[str]) -> TrendPoint:
    labels = dict(s.labels)
    series = ",".join(f"{k}={labels.get(k, '-')}" for k in group_by) or ALL_RUNS
    gpus = s.cost.gpus if s.cost is not None else None
    tps = s.throughput.output_tokens_per_s
    lat = s.latency_ms
    return TrendPoint(
        str(path),
        s.started_at,
        s.labels,
        series,
        s.trace_fingerprint,
        s.cache.reported_hit_rate,
        s.cache.server_metrics_hit_rate,
        s.cache.theoretical_hit_rate,
        lat.ttft.p50,
        lat.ttft.p99,
        lat.itl.p50,
        lat.itl.p99,
        tps,
        gpus,
        None if gpus is None or tps is None else tps / gpus,
        s.per_user_output_tokens_per_s.p50,
        None if s.cost is None else s.cost.usd_per_million_output_tokens,
        False,
    )


def _throughput(p: TrendPoint, per_gpu: bool) -> float | None:
    return p.output_tokens_per_s_per_gpu if per_gpu else p.output_tokens_per_s


def per_gpu(points: Sequence[TrendPoint]) -> bool:
    """Is throughput per GPU known for every run (their cost options said how many GPUs)?"""
    return bool(points) and all(p.output_tokens_per_s_per_gpu is not None for p in points)


def frontier(points: Sequence[TrendPoint]) -> list[bool]:
    """Which runs no other run dominates in per-user speed and throughput (per GPU when known)."""
    gpu = per_gpu(points)
    xy = [(p.per_user_output_tokens_per_s_p50, _throughput(p, gpu)) for p in points]
    out = []
    for x, y in xy:
        if x is None or y is None:
            out.append(False)
            continue
        out.append(
            not any(
                qx is not None and qy is not None and qx >= x and qy >= y and (qx > x or qy > y)
                for qx, qy in xy
            )
        )
    return out


def build_trend(dirs: Sequence[Path], cost: CostOptions | None = None) -> Trend:
    """The runs of ``dirs``, oldest first, in series by the labels that differ between them;
    ``cost`` recomputes each run's cost block (the cost flags)."""
    if len(dirs) < 2:
        raise UsageError("--trend takes two or more results directories")
    loaded = ((d, with_cost(load_summary(d), cost)) for d in dirs)
    runs = sorted(loaded, key=lambda t: t[1].started_at or "")
    names = sorted({k for _, s in runs for k, _ in s.labels})
    group_by = [k for k in names if len({dict(s.labels).get(k) for _, s in runs}) > 1]
    points = [_point(d, s, group_by) for d, s in runs]
    on = frontier(points)
    points = [dataclasses.replace(p, on_frontier=f) for p, f in zip(points, on, strict=True)]
    warnings = []
    prints = {p.trace_fingerprint for p in points if p.trace_fingerprint}
    if len(prints) > 1:
        warnings.append(
            "the runs replayed different traces (fingerprints "
            + ", ".join(sorted(short(f) for f in prints))
            + "): their figures do not compare"
        )
    if any(p.trace_fingerprint is None for p in points):
        warnings.append("some runs record no trace fingerprint: whether they compare is unknown")
    return Trend(tuple(points), tuple(group_by), tuple(warnings))


@dataclass(frozen=True, slots=True)
class Figure:
    name: str  # the chart's name (its PNG file)
    title: str
    unit: str
    get: Callable[[TrendPoint], float | None]
    format: Callable[[float], str]


def _pct(v: float) -> str:
    return f"{v * 100:.1f}%"


def _ms(v: float) -> str:
    return f"{v:,.1f} ms"


def _tps(v: float) -> str:
    return f"{v:,.1f} tok/s"


FIGURES = (
    Figure(
        "reported_hit_rate",
        "Hit rate, reported by the server",
        "hit rate",
        lambda p: p.reported_hit_rate,
        _pct,
    ),
    Figure(
        "server_metrics_hit_rate",
        "Hit rate, from /metrics",
        "hit rate",
        lambda p: p.server_metrics_hit_rate,
        _pct,
    ),
    Figure(
        "theoretical_hit_rate",
        "Hit rate, theoretical",
        "hit rate",
        lambda p: p.theoretical_hit_rate,
        _pct,
    ),
    Figure("ttft_p50", "TTFT p50", "ms", lambda p: p.ttft_ms_p50, _ms),
    Figure("ttft_p99", "TTFT p99", "ms", lambda p: p.ttft_ms_p99, _ms),
    Figure("itl_p50", "ITL p50", "ms", lambda p: p.itl_ms_p50, _ms),
    Figure("itl_p99", "ITL p99", "ms", lambda p: p.itl_ms_p99, _ms),
    Figure(
        "output_tokens_per_s_per_gpu",
        "Output tokens/s per GPU",
        "tok/s",
        lambda p: p.output_tokens_per_s_per_gpu,
        _tps,
    ),
    Figure(
        "output_tokens_per_s",
        "Output tokens/s (total)",
        "tok/s",
        lambda p: p.output_tokens_per_s,
        _tps,
    ),
    Figure(
        "per_user_output_tokens_per_s_p50",
        "Output tokens/s per user (p50)",
        "tok/s",
        lambda p: p.per_user_output_tokens_per_s_p50,
        _tps,
    ),
    Figure(
        "usd_per_million_output_tokens",
        "USD per million output tokens",
        "USD",
        lambda p: p.usd_per_million_output_tokens,
        fmt.usd,
    ),
)


def _series_names(trend: Trend) -> list[str]:
    return list(dict.fromkeys(p.series for p in trend.points))


def trend_charts(trend: Trend, width: int = 490, height: int = 280) -> dict[str, str]:
    """Each figure over the runs (x: the run's number, oldest first), one line per series; then
    the throughput–interactivity chart with its frontier."""
    names = _series_names(trend)
    out: dict[str, str] = {}
    for f in FIGURES:
        series = []
        for i, name in enumerate(names):
            pts = [(n + 1.0, f.get(p)) for n, p in enumerate(trend.points) if p.series == name]
            series.append(svg.Series(name, pts, svg.PALETTE[i % len(svg.PALETTE)]))
        if not any(s.visible for s in series):
            continue  # e.g. cost without cost options, /metrics without a metrics page
        out[f"trend_{f.name}"] = svg.line_chart(
            series,
            title=f"{f.title}, run by run",
            x_label="run (oldest first)",
            y_label=f.unit,
            y_format=f.format,
            x_integer=True,
            width=width,
            height=height,
        )
    out["trend_pareto"] = pareto_chart(trend, width, height)
    return out


def _xy(p: TrendPoint, gpu: bool) -> tuple[float, float] | None:
    x, y = p.per_user_output_tokens_per_s_p50, _throughput(p, gpu)
    return None if x is None or y is None else (x, y)


def pareto_chart(trend: Trend, width: int = 490, height: int = 280) -> str:
    """The runs by per-user speed and throughput, each labelled with its number; the frontier
    dashed through the runs on it."""
    gpu = per_gpu(trend.points)
    series = []
    for i, name in enumerate(_series_names(trend)):
        pts = sorted(
            (xy, f"#{n}")
            for n, p in enumerate(trend.points, 1)
            if p.series == name and (xy := _xy(p, gpu)) is not None
        )
        xys: list[tuple[float, float | None]] = [xy for xy, _ in pts]
        color = svg.PALETTE[i % len(svg.PALETTE)]
        series.append(svg.Series(name, xys, color, labels=[label for _, label in pts]))
    edge: list[tuple[float, float | None]] = sorted(
        xy for p in trend.points if p.on_frontier and (xy := _xy(p, gpu)) is not None
    )
    series.append(svg.Series("frontier", edge, "#6b7280", dash=True, markers=False))
    return svg.line_chart(
        series,
        title="Throughput vs interactivity, the frontier dashed",
        x_label="per-user output tokens/s (p50)",
        y_label="output tokens/s " + ("per GPU" if gpu else "(total)"),
        y_format=_tps,
        width=width,
        height=height,
    )


COLUMNS: tuple[tuple[str, Callable[[TrendPoint], str]], ...] = (
    ("started", lambda p: p.started_at or fmt.NA),
    ("series", lambda p: p.series),
    ("hit rate (reported)", lambda p: fmt.pct(p.reported_hit_rate)),
    ("TTFT p99", lambda p: fmt.ms(p.ttft_ms_p99)),
    ("ITL p50", lambda p: fmt.ms(p.itl_ms_p50)),
    ("output tok/s", lambda p: fmt.num(p.output_tokens_per_s)),
    ("per user p50", lambda p: fmt.num(p.per_user_output_tokens_per_s_p50)),
    ("frontier", lambda p: "yes" if p.on_frontier else ""),
)


def render_trend(trend: Trend) -> RenderableType:
    t = text_table("run", *(h for h, _ in COLUMNS))
    for n, p in enumerate(trend.points, 1):
        t.add_row(f"#{n}", *(get(p) for _, get in COLUMNS))
    return t


def render_trend_html(trend: Trend, source: str | None = None) -> str:
    rows = [
        [escape(f"#{n}"), *(escape(get(p)) for _, get in COLUMNS), escape(p.results_dir)]
        for n, p in enumerate(trend.points, 1)
    ]
    by = ", ".join(trend.group_by) or "none (one series)"
    notes = "".join(f"<p class='note'>warning: {escape(w)}</p>" for w in trend.warnings)
    body = (
        f"<h1>agentx trend</h1><div class='meta'>{len(trend.points)} runs, series by "
        f"labels: {escape(by)}</div>{notes}"
        f"<h2>Figures</h2><div class='charts'>{''.join(trend_charts(trend).values())}</div>"
        "<h2>Runs</h2>" + table(["run", *(h for h, _ in COLUMNS), "results"], rows, raw=True)
    )
    return page("agentx trend", body, source)


def write_trend(trend: Trend, out_dir: Path, source: str | None = None) -> list[Path]:
    """``-o DIR``: ``trend.json``, ``trend.html``, ``trend.csv`` and each chart as PNG."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(trend.to_json(), option=orjson.OPT_INDENT_2)
    write_atomic(out_dir / TREND_FILE, data, force=True)
    write_atomic(out_dir / "trend.html", render_trend_html(trend, source), force=True)
    written = [out_dir / TREND_FILE, out_dir / "trend.html"]
    written += export.write_trend_csv(trend, out_dir)
    written += export.write_pngs(trend_charts(trend), out_dir)
    return written
