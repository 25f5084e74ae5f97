"""`agentx demo`: the main job end to end on embedded defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import app, err, fail, json_option, out, print_json
from agentx.cli.declared import declared_command, typer_option
from agentx.core.errors import AgentxError
from agentx.core.options import Panel
from agentx.core.outputs import output_flag


@app.command()
@declared_command()
def demo(
    workdir: Annotated[
        Path,
        typer_option(
            output_flag(
                "where the capture, clean trace and results go [default: results/demo]",
                metavar="DIR",
                old=("--workdir",),
            )
        ),
    ] = Path("results/demo"),
    sessions: Annotated[
        int,
        typer.Option(
            "--sessions",
            min=1,
            metavar="N",
            rich_help_panel=Panel.LOAD,
            help="scripted agent sessions",
        ),
    ] = 2,
    turns: Annotated[
        int,
        typer.Option(
            "--turns",
            min=1,
            metavar="N",
            rich_help_panel=Panel.LOAD,
            help="model calls per agent session",
        ),
    ] = 6,
    fast: Annotated[
        bool,
        typer.Option(
            "--fast",
            rich_help_panel=Panel.ENGINE,
            help="serve-sim without modelled latency, no think time: checks an install in seconds "
            "(same hit rates; loopback latencies)",
        ),
    ] = False,
    json_out: Annotated[bool, json_option("print the replay summaries")] = False,
) -> None:
    """Capture a scripted agent session, scrub it, replay it against serve-sim, print the report."""
    from agentx.demo.run import run_demo
    from agentx.report.render import render_summary
    from agentx.scrub.report import render_report

    try:
        result = run_demo(
            workdir,
            agent_sessions=sessions,
            agent_turns=turns,
            fast=fast,
            say=(lambda msg: err.print(msg, markup=False)),
        )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json({name: s.to_json() for name, s in result.replays.items()})
        return
    out.print(render_report(result.scrub))
    for name, summary in result.replays.items():
        out.rule(f"replay of the {name} trace")
        out.print(render_summary(summary))
    out.print(
        f"results under {result.output_dir}/ (agentx report {result.output_dir}/replay-capture)"
    )
