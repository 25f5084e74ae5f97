"""``agentx sweep``: one replay per concurrency level; the throughput-interactivity curve.

Each level is an ordinary ``agentx replay`` (:func:`agentx.replay.run_replay`) with the same
options and ``--concurrency N``, writing its own results directory ``DIR/c{N}/``. With several
``--endpoint`` and ``--route`` naming several policies, the sweep is over the policies too: one
level per policy and concurrency (every concurrency for the first policy, then the next),
``DIR/POLICY/`` when one concurrency is given, else ``DIR/POLICY-c{N}/``. The sweep then
collects one point per level into ``DIR/sweep.json`` (``agentx.sweep/1``, rewritten after every
level so an interrupted sweep keeps what it measured) and draws ``DIR/sweep.svg`` and
``DIR/sweep.html`` (:mod:`agentx.report.sweep_view`): total output tokens/s against per-user output
tokens/s (the throughput-interactivity trade-off), TTFT p50 / p99 against concurrency and, with
cost options, cost per million output tokens against per-user tokens/s.

Levels run in the order given, against the same server. Before each level the server's prefix
cache is reset where the server allows it (``--reset-cache``, the default: vLLM with
``VLLM_SERVER_DEV_MODE=1``, SGLang, serve-sim); where it does not, the level's summary carries a
warning that it may find the previous level's blocks. The default cache-bust marker per tree
instance (``--salt``) also keeps sessions from sharing cache across lanes and levels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from agentx.core.errors import UsageError
from agentx.core.outputs import check_results_dir, claimed_results_dir, unique_dir, write_atomic
from agentx.core.urls import redact_url
from agentx.replay import ReplayOptions, run_replay
from agentx.replay.stop import stop_signals
from agentx.report.page import page_source
from agentx.report.sweep_view import render_sweep_html, render_table, sweep_point, sweep_svg
from agentx.results.sweep import POINT_KEYS, ROUTED_POINT_KEYS, SCHEMA, Sweep, SweepPoint
from agentx.routing import Route
from agentx.workload.source import open_source

__all__ = [
    "POINT_KEYS",
    "ROUTED_POINT_KEYS",
    "SCHEMA",
    "SweepOptions",
    "SweepResult",
    "default_sweep_dir",
    "parse_levels",
    "render_table",
    "run_sweep",
    "sweep_point",
]


def default_sweep_dir() -> Path:
    """``sweep`` without ``-o``: ``results/sweep-TIME`` (``-2``, ``-3``... when it exists), as
    ``replay``'s ``results/replay-TIME``."""
    return unique_dir(Path("results") / datetime.now().strftime("sweep-%Y%m%d-%H%M%S"))


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
    """The replay options every level shares (its ``concurrency``, ``route`` and
    ``output_dir`` are replaced per level), the levels, the routing policies (empty: every
    level routes as ``replay`` says) and the sweep's directory."""

    replay: ReplayOptions
    levels: tuple[int, ...]
    output_dir: Path
    force: bool = False  # replace an earlier sweep's results in output_dir
    routes: tuple[Route, ...] = ()

    def __post_init__(self) -> None:
        if not self.levels or any(n < 1 for n in self.levels):
            raise UsageError("--concurrency levels must be at least 1")
        if self.replay.workers != "auto" and self.replay.workers > min(self.levels):
            raise UsageError("--workers cannot exceed the lowest --concurrency level")
        if len(self.routes) > 1 and not self.replay.routed:
            raise UsageError(
                "--route with several policies sweeps client-side routing: give two or more "
                "--endpoint (one per replica)"
            )

    def runs(self) -> tuple[tuple[Route | None, int, str], ...]:
        """Every level in the order run: its policy (``None``: as ``replay`` routes), its
        concurrency and its results directory (relative to the sweep's)."""
        if len(self.routes) <= 1:
            route = self.routes[0] if self.routes else None
            return tuple((route, n, f"c{n}") for n in self.levels)
        one = len(self.levels) == 1
        return tuple(
            (r, n, str(r) if one else f"{r}-c{n}") for r in self.routes for n in self.levels
        )


@dataclass(frozen=True, slots=True)
class SweepResult:
    data: Sweep  # sweep.json, what --json prints
    output_dir: Path
    warnings: tuple[str, ...] = ()
    interrupted: bool = False
    exit_code: int = 0  # the interrupted level's (130 Ctrl-C, 143 SIGTERM), else 0
    failure: str | None = None  # a level that measured nothing it claims stopped the sweep


def run_sweep(
    options: SweepOptions,
    on_level: Callable[[SweepPoint], None] | None = None,
    on_start: Callable[[int, Route | None, int, str], None] | None = None,
) -> SweepResult:
    """Replay once per level; write ``c{N}/``, ``sweep.json`` and ``sweep.svg`` under the dir.

    Raises ``AgentxError`` when a level cannot run (bad trace, unreachable endpoint); the levels
    measured before it stay on disk. ``on_start(k, route, n, name)`` is called as level ``k``
    (from 1) of policy ``route`` and concurrency ``n`` starts into its directory ``name``, ``on_level`` with each point as it
    lands. A level whose run failed
    (every request failed, a gate) stops the sweep: the levels after it would measure the same
    broken server.
    """
    out = options.output_dir
    base = options.replay
    check_results_dir(out, force=options.force)  # before the first level, not after it
    open_source(base.trace)  # a trace that cannot be read fails before any level starts
    for _, _, name in options.runs():
        check_results_dir(out / name, force=options.force)
    # made, proven writable and locked for the whole sweep before its first level
    with claimed_results_dir(out, force=options.force):
        return _run_levels(options, on_level, on_start)


def _run_levels(
    options: SweepOptions,
    on_level: Callable[[SweepPoint], None] | None,
    on_start: Callable[[int, Route | None, int, str], None] | None,
) -> SweepResult:
    out = options.output_dir
    base = options.replay
    endpoint = ", ".join(redact_url(e) for e in base.endpoints)  # as a routed summary names it
    data = Sweep(endpoint, str(base.trace), base.model, ())
    warnings: list[str] = []
    interrupted = False
    exit_code = 0
    failure: str | None = None
    with stop_signals():  # a signal between two levels stops the sweep too (Interrupted)
        for k, (route, n, name) in enumerate(options.runs(), 1):
            if on_start is not None:
                on_start(k, route if len(options.routes) > 1 else None, n, name)
            level = dataclasses.replace(
                base,
                schedule=dataclasses.replace(base.schedule, concurrency=n),
                route=base.route if route is None else route,
                output_dir=out / name,
                force=options.force,
            )
            result = run_replay(level)
            point = sweep_point(n, result.summary, name)
            data = dataclasses.replace(
                data, model=result.summary.model, points=(*data.points, point)
            )
            what = f"concurrency {n}" if len(options.routes) <= 1 else f"{route} concurrency {n}"
            warnings.extend(f"{what}: {w}" for w in result.warnings)
            lanes = result.summary.config.get("lanes")
            if isinstance(lanes, int) and lanes < n:
                warnings.append(
                    f"{what}: only {lanes} lanes had work (the trace has {lanes} "
                    "sessions to replay and nothing recycles them: --duration or --max-requests "
                    f"does); the point measures {lanes} concurrent sessions, not {n}"
                )
            write_sweep(out, data)
            if on_level is not None:
                on_level(point)
            if result.interrupted or result.exit_code:
                interrupted, exit_code = True, result.exit_code
                break
            if result.failure is not None:
                failure = f"{what}: {result.failure}"
                break
    return SweepResult(data, out, tuple(warnings), interrupted, exit_code, failure)


def write_sweep(out: Path, data: Sweep) -> None:
    summary = orjson.dumps(data.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
    write_atomic(out / "sweep.json", summary, force=True)
    write_atomic(out / "sweep.svg", sweep_svg(data), force=True)
    write_atomic(out / "sweep.html", render_sweep_html(data, page_source(out)), force=True)
