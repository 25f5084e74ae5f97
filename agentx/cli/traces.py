"""Trace analysis commands: stats, simulate, recover."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import (
    Force,
    app,
    err,
    fail,
    json_option,
    out,
    print_json,
    trace_argument,
)
from agentx.cli.declared import Given, declared_command, typer_option
from agentx.core.errors import AgentxError
from agentx.core.options import Panel
from agentx.formats.options import ReadOptions
from agentx.prefixcache.tokenizer import TOKENIZER, TOKENIZER_SERVER
from agentx.simulate.options import SimulateOptions


@app.command()
@declared_command(ReadOptions)
def stats(
    trace: Annotated[
        Path, trace_argument("agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL")
    ],
    json_out: Annotated[bool, json_option("print the agentx.stats/1 object")] = False,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size",
            min=1,
            metavar="N",
            rich_help_panel=Panel.TOKENIZER,
            help="prefix-cache block size in tokens (default 16; hash-only traces: the file's "
            "own, or a multiple of it)",
            show_default=False,
        ),
    ] = None,
    tokenizer: Annotated[str | None, typer_option(TOKENIZER)] = None,
    tokenizer_url: Annotated[str | None, typer_option(TOKENIZER_SERVER)] = None,
    *,
    given: Given,
) -> None:
    """Sessions, threads, requests, token and think-time distributions, theoretical hit rate."""
    from agentx.apis.translate import to_chat
    from agentx.core.progress import progress_for
    from agentx.prefixcache.tokenizer import resolve_tokenizer
    from agentx.workload import stats as stats_mod

    try:
        read = given.build(ReadOptions)
        tok = resolve_tokenizer(tokenizer, server_url=tokenizer_url, to_chat=to_chat)
        with progress_for("stats", console=err) as progress:
            result = stats_mod.compute_stats(
                trace,
                block_size=block_size,
                tokenizer=tok,
                progress=progress,
                flat_chains=read.split,
            )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
    else:
        out.print(stats_mod.render_table(result))


@app.command()
@declared_command(SimulateOptions)
def simulate(
    trace: Annotated[
        Path, trace_argument("agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL")
    ],
    json_out: Annotated[bool, json_option("print the agentx.simulate/1 object")] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            rich_help_panel=Panel.OUTPUT,
            help="write hit rate vs capacity as an SVG file",
            show_default=False,
        ),
    ] = None,
    force: Force = False,
    *,
    given: Given,
) -> None:
    """Offline KV-cache simulator: prefix-cache hit rate vs cache capacity, GPU-only vs GPU+DRAM."""
    from agentx import simulate as so
    from agentx.core.progress import progress_for
    from agentx.simulate.options import simulate_options

    try:
        if plot is not None:
            so.check_plot(plot, force=force)
        options = simulate_options(**given.values(SimulateOptions), trace=trace)
        with progress_for("simulate", console=err) as progress:
            result = so.run_simulate(options, progress=progress)
        if plot is not None:
            so.write_plot(result, plot, force=force)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.data.to_json())
    else:
        out.print(so.render_table(result))
    if plot is not None:
        err.print(f"agentx: wrote {plot}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def recover(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="TRACE|RUN_DIR",
            help="agentx Parquet trace whose writer died, or the results directory of a replay "
            "that was killed",
        ),
    ],
    json_out: Annotated[
        bool, json_option("a replay's results directory: print its summary.json")
    ] = False,
) -> None:
    """Rebuild a trace from the write-ahead spool its writer left when it was killed, or a
    killed replay's results directory from the rows it spooled."""
    from agentx.replay.recover import is_run_dir

    if is_run_dir(path):
        _recover_run(path, json_out=json_out)
        return
    from agentx import store
    from agentx.core.progress import progress_for
    from agentx.store.reader import recover_report

    try:
        with progress_for("recover", console=err) as progress:
            report = recover_report(path, progress=progress)
        if report is None:
            store.open_trace(path)  # nothing to do: say so only if the trace itself is sound
    except AgentxError as exc:
        fail(exc)
    if report is None:
        out.print(f"{path}: nothing to recover (no spool)", markup=False, soft_wrap=True)
        return
    out.print(f"{path}: recovered {report.rows} exchanges", markup=False, soft_wrap=True)
    if report.kept_spool is not None:
        lines = "line" if report.damaged == 1 else "lines"
        extend = "exchange" if report.orphaned == 1 else "exchanges"
        err.print(
            f"agentx: warning: skipped {report.damaged} damaged spool {lines} and "
            f"{report.orphaned} {extend} that extend them; the spool is kept as "
            f"{report.kept_spool}",
            markup=False,
            soft_wrap=True,
        )


def _recover_run(path: Path, *, json_out: bool) -> None:
    from agentx.replay.recover import recover_run

    try:
        result = recover_run(path)
    except AgentxError as exc:
        fail(exc)
    for warning in dict.fromkeys(result.warnings):
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.summary.to_json())
        return
    out.print(
        f"{path}: recovered {len(result.records)} requests of a killed run (partial results)",
        markup=False,
        soft_wrap=True,
    )


@app.command("example-path")
def example_path(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="example (the bundled agentx trace) or weka (Weka JSON samples)",
        ),
    ] = "example",
    list_all: Annotated[
        bool,
        typer.Option(
            "--list",
            rich_help_panel=Panel.OUTPUT,
            help="list every bundled example: name, path, what it is",
        ),
    ] = False,
) -> None:
    """Print where a bundled example is. Trace arguments also take its name: `agentx stats example`."""
    from agentx.core import examples

    if list_all:
        for ex in examples.EXAMPLES.values():
            sys.stdout.write(f"{ex.name}\t{ex.path}\t{ex.description}\n")  # tab-separated
        return
    try:
        path = examples.example_path(name)
    except AgentxError as exc:
        fail(exc)
    sys.stdout.write(f"{path}\n")
