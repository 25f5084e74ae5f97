"""``agentx sweep``: one replay per concurrency level; the throughput-interactivity curve.

Each level is an ordinary ``agentx replay`` (:func:`agentx.replay.run_replay`) with the same
options and ``--concurrency N``, writing its own results directory ``DIR/c{N}/``. The sweep then
collects one point per level into ``DIR/sweep.json`` (``agentx.sweep/1``, rewritten after every
level so an interrupted sweep keeps what it measured) and draws ``DIR/sweep.svg``: total output
tokens/s against per-user output tokens/s (the throughput-interactivity trade-off), and TTFT p50 /
p99 against concurrency.

Levels run in the order given, against the same server: a level finds the server's cache as the
previous level left it. The default per-lane salt (``--salt``) keeps sessions from sharing cache
across lanes and levels, so each level measures its own reuse.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agentx.errors import AgentxError, UsageError
from agentx.replay import ReplayOptions, run_replay

SCHEMA = "agentx.sweep/1"
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


def parse_levels(text: str) -> tuple[int, ...]:
    """``"1,2,4,8"`` -> ``(1, 2, 4, 8)``: positive, distinct, in the order given."""
    levels: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            n = int(item)
        except ValueError:
            raise UsageError(f"--concurrency: {item!r} is not an integer (e.g. 1,2,4,8)") from None
        if n < 1:
            raise UsageError("--concurrency levels must be at least 1")
        if n in levels:
            raise UsageError(f"--concurrency: level {n} appears twice")
        levels.append(n)
    if not levels:
        raise UsageError("--concurrency: give at least one level (e.g. 1,2,4,8)")
    return tuple(levels)


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """The replay options every level shares (its ``concurrency`` and ``output_dir`` are
    replaced per level), the levels, and the sweep's directory."""

    replay: ReplayOptions
    levels: tuple[int, ...]
    output_dir: Path

    def __post_init__(self) -> None:
        if not self.levels or any(n < 1 for n in self.levels):
            raise UsageError("--concurrency levels must be at least 1")
        if self.replay.workers > min(self.levels):
            raise UsageError("--workers cannot exceed the lowest --concurrency level")


@dataclass(frozen=True, slots=True)
class SweepResult:
    data: dict[str, Any]  # the agentx.sweep/1 object (sweep.json, what --json prints)
    output_dir: Path
    warnings: tuple[str, ...] = ()
    interrupted: bool = False


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def sweep_point(concurrency: int, summary: dict[str, Any]) -> dict[str, Any]:
    """One point of ``agentx.sweep/1`` from one level's ``summary.json``."""
    return {
        "concurrency": concurrency,
        "requests_per_s": _get(summary, "throughput", "requests_per_s"),
        "output_tokens_per_s": _get(summary, "throughput", "output_tokens_per_s"),
        "per_user_output_tokens_per_s_p50": _get(summary, "per_user_output_tokens_per_s", "p50"),
        "ttft_ms_p50": _get(summary, "latency_ms", "ttft", "p50"),
        "ttft_ms_p99": _get(summary, "latency_ms", "ttft", "p99"),
        "itl_ms_p50": _get(summary, "latency_ms", "itl", "p50"),
        "hit_rate_reported": _get(summary, "cache", "reported_hit_rate"),
        "hit_rate_theoretical": _get(summary, "cache", "theoretical_hit_rate"),
        "errors": _get(summary, "requests", "errors"),
        # extras
        "requests": _get(summary, "requests", "total"),
        "duration_s": summary.get("duration_s"),
        "client_saturated": _get(summary, "client", "saturated"),
        "results_dir": f"c{concurrency}",
    }


def run_sweep(
    options: SweepOptions, on_level: Callable[[dict[str, Any]], None] | None = None
) -> SweepResult:
    """Replay once per level; write ``c{N}/``, ``sweep.json`` and ``sweep.svg`` under the dir.

    Raises ``AgentxError`` when a level cannot run (bad trace, unreachable endpoint); the levels
    measured before it stay on disk. ``on_level`` is called with each point as it lands.
    """
    out = options.output_dir
    base = options.replay
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "endpoint": base.endpoint,
        "trace": str(base.trace),
        "model": base.model,
        "points": [],
    }
    warnings: list[str] = []
    interrupted = False
    for n in options.levels:
        level = dataclasses.replace(base, concurrency=n, output_dir=out / f"c{n}")
        result = run_replay(level)
        data["model"] = result.summary.get("model", data["model"])
        point = sweep_point(n, result.summary)
        data["points"].append(point)
        warnings.extend(f"concurrency {n}: {w}" for w in result.warnings)
        write_sweep(out, data)
        if on_level is not None:
            on_level(point)
        if result.interrupted:
            interrupted = True
            break
    return SweepResult(data, out, tuple(warnings), interrupted)


def write_sweep(out: Path, data: dict[str, Any]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write(out / "sweep.json", orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
        _atomic_write(out / "sweep.svg", sweep_svg(data).encode())
    except OSError as exc:
        raise AgentxError(f"cannot write the sweep to {out}: {exc.strerror or exc}") from None


def _atomic_write(path: Path, content: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


_STYLE = (
    "<style>text{font-family:system-ui,sans-serif}.ct{font-size:13px;font-weight:600;"
    "text-anchor:middle}.xt{font-size:11px;text-anchor:middle;fill:#374151}.yt{font-size:11px;"
    "text-anchor:end;fill:#374151}.al{font-size:11px;text-anchor:middle;fill:#6b7280}"
    ".lg{font-size:11px;fill:#374151}.gr{stroke:#e5e7eb}.ax{stroke:#9ca3af}</style>"
)


def sweep_svg(data: dict[str, Any]) -> str:
    """Two charts in one standalone SVG: the throughput-interactivity curve and TTFT."""
    from agentx.report import svg

    pts = data["points"]
    w, h = 640, 280
    curve = [
        (p["per_user_output_tokens_per_s_p50"], p["output_tokens_per_s"])
        for p in sorted(pts, key=lambda p: p["concurrency"])
        if p["per_user_output_tokens_per_s_p50"] is not None
    ]
    levels = ", ".join(str(p["concurrency"]) for p in pts)
    top = svg.line_chart(
        [svg.Series(f"concurrency {levels}", curve)],
        title="Throughput vs interactivity",
        x_label="per-user output tokens/s (p50)",
        y_label="output tokens/s (total)",
        y_format=lambda v: f"{v:,.0f} tok/s",
        width=w,
        height=h,
    )
    ttft = svg.line_chart(
        [
            svg.Series("TTFT p50", [(p["concurrency"], p["ttft_ms_p50"]) for p in pts]),
            svg.Series(
                "TTFT p99", [(p["concurrency"], p["ttft_ms_p99"]) for p in pts], svg.PALETTE[1]
            ),
        ],
        title="Time to first token vs concurrency",
        x_label="concurrency (session lanes)",
        y_label="TTFT (ms)",
        y_format=lambda v: f"{v:,.1f} ms",
        width=w,
        height=h,
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {2 * h}" width="{w}" '
        f'height="{2 * h}">{_STYLE}<rect width="100%" height="100%" fill="#fff"/>'
        f'{top}<g transform="translate(0,{h})">{ttft}</g></svg>\n'
    )


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def render_table(data: dict[str, Any]) -> Any:
    """A rich table: one row per level."""
    from rich.table import Table

    t = Table(
        title=f"sweep of {data['trace']} against {data['endpoint']} ({data.get('model')})",
        header_style="bold",
        show_edge=False,
    )
    for col in (
        "lanes",
        "req/s",
        "out tok/s",
        "tok/s/user\np50",
        "TTFT ms\np50",
        "TTFT ms\np99",
        "ITL ms\np50",
        "hit rate\nreported",
        "hit rate\ntheory",
        "errors",
    ):
        t.add_column(col, justify="right")
    for p in data["points"]:
        t.add_row(
            str(p["concurrency"]),
            _fmt(p["requests_per_s"], ",.2f"),
            _fmt(p["output_tokens_per_s"], ",.1f"),
            _fmt(p["per_user_output_tokens_per_s_p50"], ",.1f"),
            _fmt(p["ttft_ms_p50"], ",.1f"),
            _fmt(p["ttft_ms_p99"], ",.1f"),
            _fmt(p["itl_ms_p50"], ",.2f"),
            _fmt(p["hit_rate_reported"], ".1%"),
            _fmt(p["hit_rate_theoretical"], ".1%"),
            str(p["errors"]),
        )
    return t
