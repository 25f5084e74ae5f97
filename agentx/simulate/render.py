"""Rendering of a simulate result: a rich table for the terminal, a standalone SVG plot."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from agentx.core.errors import UsageError
from agentx.core.outputs import check_output, write_atomic
from agentx.results.simulate import Point, RecordedSimulation, ReplaySimulation
from agentx.simulate.run import SimulateResult

# the chart classes of agentx.report.svg, styled for an SVG opened on its own
_STYLE = (
    "<style>text{font-family:system-ui,sans-serif}.ct{font-size:13px;font-weight:600;"
    "text-anchor:middle}.xt{font-size:11px;text-anchor:middle;fill:#374151}.yt{font-size:11px;"
    "text-anchor:end;fill:#374151}.al{font-size:11px;text-anchor:middle;fill:#6b7280}"
    ".lg{font-size:11px;fill:#374151}.gr{stroke:#e5e7eb}.ax{stroke:#9ca3af}</style>"
    '<rect width="100%" height="100%" fill="#fff"/>'
)


def human_tokens(n: float) -> str:
    """160000 -> '160K', 1500000 -> '1.5M', 512 -> '512'."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.3g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _replay_table(d: ReplaySimulation) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from agentx.core.tables import Table as Figures

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("trace", f"{d.trace or ''} ({d.format or '?'})")
    sched = d.schedule
    if "from_results" in sched:
        how = f"sent at the times recorded in {sched['from_results']}"
    else:
        how = (
            f"replay's schedule: {sched['concurrency']} lane(s), time scale {sched['time_scale']}"
            + (f", max think {sched['max_think_s']} s" if sched["max_think_s"] is not None else "")
            + (f", warm-up {sched['warmup']}/lane" if sched["warmup"] else "")
        )
    head.add_row("timeline", how)
    head.add_row(
        "requests",
        f"{d.requests:,} measured in {d.sessions:,} sessions, "
        f"{human_tokens(d.prompt_tokens)} prompt tokens ({d.tokenizer})",
    )
    head.add_row(
        "theoretical hit rate",
        f"{_pct(d.theoretical_hit_rate)} (unbounded, block size {d.block_size})",
    )
    routing = d.routing
    if routing is not None:
        loss = routing.loss_points
        head.add_row(
            "routing",
            f"{routing.policy} over {routing.replicas} replicas: each replica's own unbounded "
            f"cache {_pct(routing.replica_theoretical_hit_rate)}, routing loss "
            + ("-" if loss is None else f"{loss:.1f} points")
            + f", requests max/mean {_ratio(routing.imbalance.requests_max_over_mean)}",
        )
    table = Figures()
    columns = ["GPU capacity (tokens)", "blocks", "offload", "hit rate", "GPU", "evicted"]
    if routing is not None:
        columns[0] = "GPU capacity per replica"
        columns += ["TTFT p50", "per replica"]
    for col in columns:
        table.add_column(col, justify="right")
    for p in d.points:
        run = p.run
        row = [
            f"{p.capacity_tokens:,}",
            "-" if run is None else f"{run.kv_blocks:,}",
            human_tokens(p.offload_tokens) if p.offload_tokens else "-",
            _pct(p.hit_rate),
            _pct(p.gpu_hit_rate),
            "-" if run is None else f"{run.evicted_blocks:,}",
        ]
        if routing is not None:
            ttft = None if run is None else run.ttft_p50_s
            row.append("-" if ttft is None else f"{ttft:.3f} s")
            row.append(
                "-"
                if run is None
                else " ".join(
                    "-" if r.hit_rate is None else f"{100 * r.hit_rate:.0f}%" for r in run.replicas
                )
            )
        table.add_row(*row)
    note = Text(
        "engine model: admission when the prompt fits, cache looked up at admission, LRU "
        "eviction (agentx.prefixcache.engine, as serve-sim)",
        style="dim",
    )
    return Group(head, Text(""), table, note)


def render_table(result: SimulateResult) -> Any:
    """A rich renderable: the trace, the model, and the hit rate at each capacity."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from agentx.core.tables import Table as Figures

    d = result.data
    if isinstance(d, ReplaySimulation):
        return _replay_table(d)
    m = d.model
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("trace", f"{d.trace or ''} ({d.format or '?'})")
    head.add_row(
        "requests",
        f"{d.requests:,} in {d.sessions:,} sessions, {human_tokens(d.prompt_tokens)} prompt tokens",
    )
    head.add_row(
        "footprint",
        f"{human_tokens(d.footprint_tokens)} tokens of distinct blocks (block size {d.block_size})",
    )
    head.add_row(
        "theoretical hit rate",
        f"{_pct(d.theoretical_hit_rate)} (unbounded; reached at "
        f"{human_tokens(d.capacity_for_theoretical_tokens)} tokens of GPU cache)",
    )
    if m.pin:
        timed = f"{m.timed_requests:,} of {d.requests:,} with a recorded duration"
        pin = f"blocks pinned while a request runs ({timed}); peak pinned " + human_tokens(
            d.peak_pinned_tokens
        )
    else:
        pin = "requests in isolation (nothing pinned)"
    head.add_row("model", f"{m.engine} engine, {pin}")
    offload = _offload(d)
    if offload:
        head.add_row("offload tier", f"{human_tokens(offload)} tokens, {m.offload_policy}")

    table = Figures()
    table.add_column("GPU capacity (tokens)", justify="right")
    table.add_column("GPU only", justify="right")
    if offload:
        table.add_column(f"+ {human_tokens(offload)} offload", justify="right")
        table.add_column("from offload", justify="right")
        table.add_column("gain (points)", justify="right")
    rows: dict[int, dict[str, Point]] = {}
    for p in d.points:
        row = rows.setdefault(p.capacity_tokens, {})
        row["offload" if p.offload_tokens else "gpu"] = p
    small = d.largest_request_tokens
    for cap, row in rows.items():
        gpu = row["gpu"].hit_rate
        cells = [f"{cap:,} ({human_tokens(cap)})" + (" *" if cap < small else ""), _pct(gpu)]
        if offload:
            both = row["offload"]
            cells += [
                _pct(both.hit_rate),
                _pct(both.offload_hit_rate),
                f"{100 * (both.hit_rate - gpu):+.1f}",
            ]
        table.add_row(*cells)
    parts: list[Any] = [head, Text(""), table]
    if any(cap < small for cap in rows):
        parts.append(
            Text(
                f"* smaller than the largest request ({human_tokens(small)} tokens with its "
                "output): a server could not run it; the simulation over-commits",
                style="dim",
            )
        )
    return Group(*parts)


def _offload(d: RecordedSimulation | ReplaySimulation) -> int:
    """The offload tier's tokens (0: none)."""
    return next((p.offload_tokens for p in d.points if p.offload_tokens), 0)


def plot_svg(result: SimulateResult) -> str:
    """Hit rate against GPU capacity (log axis): GPU only, with offload, the unbounded limit."""
    from agentx.report import svg

    d = result.data
    curve = [c for c in result.curve if c.capacity_tokens > 0]
    xs = [math.log10(c.capacity_tokens) for c in curve]
    series: list[svg.Series] = []
    if xs:
        th = d.theoretical_hit_rate
        series.append(svg.Series("unbounded", [(xs[0], th), (xs[-1], th)], svg.PALETTE[2]))
    series.append(
        svg.Series("GPU only", [(x, c.gpu_hit_rate) for x, c in zip(xs, curve, strict=True)])
    )
    offload = _offload(d)
    if offload:
        # the replay timeline's engine has one offload policy: only the recorded one names it
        policy = f" ({d.model.offload_policy})" if isinstance(d, RecordedSimulation) else ""
        series.append(
            svg.Series(
                f"GPU + {human_tokens(offload)} offload{policy}",
                [(x, c.hit_rate) for x, c in zip(xs, curve, strict=True)],
                svg.PALETTE[1],
            )
        )
    chart = svg.line_chart(
        series,
        title=f"Prefix-cache hit rate vs GPU KV capacity — {Path(d.trace or '').name}",
        x_label="GPU KV-cache capacity (tokens, log scale)",
        y_label="hit rate",
        y_format=lambda v: f"{100 * v:.1f}%",
        tick_format=lambda v: f"{100 * v:.0f}%",
        x_format=lambda v: human_tokens(10**v),
        y_max=1.0,
        width=720,
        height=320,
    )
    cut = chart.index(">") + 1  # after the opening <svg ...>
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + chart[:cut] + _STYLE + chart[cut:] + "\n"


def check_plot(path: str | os.PathLike[str], *, force: bool) -> Path:
    """Refuse a ``--plot`` path before the simulation runs: not SVG, or an existing file."""
    p = Path(path)
    if p.suffix.lower() != ".svg":
        raise UsageError(f"--plot {p}: only .svg is supported (no plotting library is installed)")
    return check_output(p, force=force)


def write_plot(result: SimulateResult, path: str | os.PathLike[str], *, force: bool = True) -> None:
    """Write the plot as SVG (the only format that needs no plotting library)."""
    write_atomic(check_plot(path, force=force), plot_svg(result), force=force)
