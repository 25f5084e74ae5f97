"""`agentx replay`: a trace as load against an OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import app, err, fail, json_option, out, print_json, trace_argument
from agentx.cli.config import Config
from agentx.cli.declared import Given, declared_command
from agentx.core.errors import AgentxError
from agentx.metrics.cost import CostInputs
from agentx.replay.options import ReplayOptions
from agentx.report.check_options import CheckInputs

REPLAY_TRACE = "trace to replay: agentx Parquet, Weka JSON (file or dir) or Mooncake JSONL"


@app.command()
@declared_command(ReplayOptions, CostInputs, CheckInputs)
def replay(
    trace: Annotated[Path, trace_argument(REPLAY_TRACE)],
    json_out: Annotated[
        bool, json_option("print summary.json to stdout (no live display)")
    ] = False,
    config: Config = None,
    *,
    given: Given,
) -> None:
    """Replay a trace as load against an OpenAI-compatible server; measure cache, TTFT, ITL, tokens/s."""
    from agentx.replay import run_replay
    from agentx.replay.options import describe, scenario_options

    try:
        checks = given.build(CheckInputs)
        options = scenario_options(
            **given.values(ReplayOptions),
            trace=trace,
            cost=given.build(CostInputs).options(),
            progress=not json_out and err.is_terminal,
        )
        if options.workload.scenario is not None or options.schedule.snapshot:
            err.print(f"agentx: {describe(options)}", markup=False, highlight=False, soft_wrap=True)
        result = run_replay(options)
        from agentx.report.baseline import check_run

        failed = result.failure is not None or bool(result.exit_code)
        check, written = check_run(
            result.summary,
            result.records,
            result.output_dir,
            checks,
            name="agentx replay",
            failed=failed,
        )
    except AgentxError as exc:
        fail(exc)
    if json_out:  # else the report below prints each warning
        for warning in dict.fromkeys(result.warnings):
            err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
        print_json(result.summary.to_json())
    else:
        from agentx.report import render_summary

        out.print(render_summary(result.summary))
        if check is not None:
            from agentx.report.ci import render_check

            out.print(render_check(check))
        err.print(
            f"agentx: results in {result.output_dir}", markup=False, highlight=False, soft_wrap=True
        )
    for warning in check.warnings if check is not None else ():
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    for path in written:
        err.print(f"agentx: wrote {path}", markup=False, highlight=False, soft_wrap=True)
    if result.failure is not None:  # said even when a signal decides the exit code
        err.print(
            f"agentx: run failed: {result.failure}", markup=False, highlight=False, soft_wrap=True
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)
    if result.failure is not None:
        raise typer.Exit(1)
    if result.summary.slo.passed is False or (check is not None and not check.passed):
        raise typer.Exit(3)
