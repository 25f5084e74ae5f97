"""`agentx sweep`: one replay per concurrency level (and routing policy), the
throughput-interactivity curve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import app, err, fail, json_option, out, print_json, trace_argument
from agentx.cli.config import Config
from agentx.cli.declared import Given, Only, declared_command, typer_option
from agentx.cli.replay import REPLAY_TRACE
from agentx.core.errors import AgentxError, UsageError
from agentx.core.options import Panel
from agentx.core.outputs import output_flag
from agentx.metrics.cost import CostInputs
from agentx.replay.options import ReplayOptions
from agentx.report.check_options import CheckInputs
from agentx.routing import ROUTES, Route, parse_routes

# replay's options that apply per level: not the preset, the snapshot starts, the gates, open
# loop, nor the scale-out (a level is one process on one machine)
PER_LEVEL = Only.without(
    ReplayOptions, Panel.SCENARIO, Panel.GATES, Panel.OPEN_LOOP, Panel.SCALE_OUT
)


@app.command()
@declared_command(PER_LEVEL, CostInputs, Only.without(CheckInputs, Panel.GATES))
def sweep(
    trace: Annotated[Path, trace_argument(REPLAY_TRACE)],
    concurrency: Annotated[
        str | None,
        typer.Option(
            "--concurrency",
            metavar="LIST",
            rich_help_panel=Panel.LOAD,
            help="comma list of session-lane counts, e.g. 1,2,4,8,16 (optional with --route "
            "naming several policies: replay's concurrency)",
        ),
    ] = None,
    route: Annotated[str | None, typer_option(ROUTES)] = None,
    output: Annotated[
        Path | None,
        typer_option(
            output_flag(
                "sweep directory: c{N}/ per level, sweep.json, sweep.svg "
                "[default: results/sweep-TIME]",
                metavar="DIR",
            )
        ),
    ] = None,
    reset_cache: Annotated[
        bool,
        typer.Option(
            "--reset-cache/--no-reset-cache",
            rich_help_panel=Panel.SERVER_METRICS,
            help="reset the server's prefix cache before each level, so every level starts "
            "cold and the levels compare (vLLM, SGLang, serve-sim; a warning when the server "
            "does not allow it); replay's default is off: one run measures the server as it is",
        ),
    ] = True,
    json_out: Annotated[bool, json_option("print sweep.json to stdout")] = False,
    config: Config = None,
    *,
    given: Given,
) -> None:
    """One replay per concurrency level (and --route policy); the throughput-interactivity curve (sweep.json, sweep.svg)."""
    from agentx.replay.options import scenario_options
    from agentx.replay.sweep import (
        SweepOptions,
        default_sweep_dir,
        parse_levels,
        render_table,
        run_sweep,
    )
    from agentx.results.sweep import SweepPoint

    done: list[int] = []
    out_dir = output if output is not None else default_sweep_dir()

    def level_start(k: int, policy_of: Route | None, n: int, name: str) -> None:
        policy = f"route {policy_of}, " if policy_of is not None else ""
        err.print(
            f"agentx: level {k}/{total}: {policy}concurrency {n} -> {out_dir / name}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def level_done(point: SweepPoint) -> None:
        done.append(point.concurrency)
        policy = f"route {point.route}, " if len(routes) > 1 else ""
        if not json_out:
            err.print(
                f"agentx: level {len(done)}/{total}: {policy}concurrency "
                f"{point.concurrency} done -> {out_dir / point.results_dir}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    try:
        routes = parse_routes(route) if route is not None else ()
        replay_options = scenario_options(
            **given.values(ReplayOptions),
            trace=trace,
            reset_cache=reset_cache,
            cost=given.build(CostInputs).options(),
            progress=not json_out and err.is_terminal,
        )
        if concurrency is None and len(routes) < 2:
            raise UsageError("--concurrency: give the levels (e.g. 1,2,4,8)")
        levels = (
            parse_levels(concurrency)
            if concurrency is not None
            else (replay_options.schedule.concurrency,)
        )
        options = SweepOptions(replay_options, levels, out_dir, replay_options.force, routes)
        total = len(options.runs())
        result = run_sweep(options, level_done, level_start)
        junit = given.build(CheckInputs).junit
        if junit is not None:
            from agentx.report.ci import write_sweep_junit

            err.print(
                f"agentx: wrote {write_sweep_junit(out_dir, result.data, junit)}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    except AgentxError as exc:
        fail(exc)
    for warning in result.warnings:
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.data.to_json())
    else:
        out.print(render_table(result.data))
        err.print(
            f"agentx: sweep in {out_dir} (sweep.json, sweep.svg, sweep.html)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)
    if result.failure is not None:
        err.print(
            f"agentx: sweep stopped: {result.failure}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
