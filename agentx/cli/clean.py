"""Trace cleaning and sharing commands: scrub, anonymize, convert."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import (
    OUTPUT_HELP,
    Force,
    app,
    err,
    fail,
    json_option,
    out,
    output_target,
    print_json,
    trace_argument,
    write_json_file,
)
from agentx.cli.declared import Given, declared_command, typer_option
from agentx.core.errors import AgentxError, UsageError
from agentx.core.options import Panel, flag, parse_tokens
from agentx.core.outputs import output_flag
from agentx.formats.options import ReadOptions

MAX_CONTEXT = flag(
    "--max-context",
    parse=parse_tokens,
    metavar="N",
    panel=Panel.CLEANING,
    help="drop requests over this many prompt tokens (e.g. 128K)",
)


@app.command()
@declared_command()
def scrub(
    trace: Annotated[Path, trace_argument("agentx trace to clean (never modified)")],
    output: Annotated[
        str,
        typer_option(output_flag("the clean trace to write" + OUTPUT_HELP, metavar="FILE|DIR/")),
    ],
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="FILE",
            rich_help_panel=Panel.REPORT,
            help="also write the report as JSON",
        ),
    ] = None,
    max_context: Annotated[str | None, typer_option(MAX_CONTEXT)] = None,
    keep_side_calls: Annotated[
        bool,
        typer.Option(
            "--keep-side-calls/--drop-side-calls",
            rich_help_panel=Panel.CLEANING,
            help="keep title/probe side calls, flagged side_call",
        ),
    ] = False,
    keep_non_model: Annotated[
        bool,
        typer.Option(
            "--keep-non-model/--drop-non-model",
            rich_help_panel=Panel.CLEANING,
            help="keep count_tokens/models/telemetry rows, flagged non_model",
        ),
    ] = False,
    redact_emails: Annotated[
        bool,
        typer.Option(
            "--redact-emails", rich_help_panel=Panel.CLEANING, help="also replace e-mail addresses"
        ),
    ] = False,
    block_size: Annotated[
        int,
        typer.Option(
            "--block-size",
            min=1,
            metavar="N",
            rich_help_panel=Panel.REPORT,
            help="block size of the hit rate in the report",
        ),
    ] = 16,
    hit_rate: Annotated[
        bool,
        typer.Option(
            "--hit-rate/--no-hit-rate",
            rich_help_panel=Panel.REPORT,
            help="measure the theoretical hit rate before and after",
        ),
    ] = True,
    json_out: Annotated[bool, json_option("print the report as JSON")] = False,
    force: Force = False,
) -> None:
    """Drop malformed exchanges, repair orphaned tool calls, redact secrets; say what and why."""
    from agentx.core.outputs import check_output
    from agentx.core.progress import progress_for
    from agentx.scrub import ScrubOptions, render_report, scrub_trace

    try:
        max_prompt_tokens = None if max_context is None else MAX_CONTEXT.value(max_context)
        if max_prompt_tokens is not None and max_prompt_tokens < 1:
            raise UsageError("--max-context must be at least 1")
    except AgentxError as exc:
        fail(exc)
    options = ScrubOptions(
        max_context=max_prompt_tokens,
        keep_side_calls=keep_side_calls,
        keep_non_model=keep_non_model,
        redact_emails=redact_emails,
        block_size=block_size,
        hit_rate=hit_rate,
    )
    dst, dataset = output_target(output)
    try:
        if report_file is not None:
            check_output(report_file, force=force)  # before the work, not after it
        with progress_for("scrub", console=err) as progress:
            result = scrub_trace(
                trace, dst, options, dataset=dataset, progress=progress, force=force
            )
        if report_file is not None:
            write_json_file(report_file, result.to_json(), force=force)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
    else:
        out.print(render_report(result))


@app.command()
@declared_command()
def anonymize(
    trace: Annotated[Path, trace_argument("agentx trace (never modified)")],
    output: Annotated[
        str,
        typer_option(
            output_flag("the shareable trace to write" + OUTPUT_HELP, metavar="FILE|DIR/")
        ),
    ],
    keep_tools: Annotated[
        bool,
        typer.Option(
            "--keep-tools", rich_help_panel=Panel.CLEANING, help="keep tool schemas as they are"
        ),
    ] = False,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="AGENTX_ANONYMIZE_KEY",
            metavar="SECRET",
            rich_help_panel=Panel.CLEANING,
            help="secret that makes the output reproducible (default: random, never stored)",
        ),
    ] = None,
    json_out: Annotated[bool, json_option("print the summary as JSON")] = False,
    force: Force = False,
) -> None:
    """Shareable trace: no original text, same token counts and prefix-sharing structure."""
    from agentx.core.progress import progress_for
    from agentx.scrub.anonymize import AnonymizeOptions, anonymize_trace

    options = AnonymizeOptions(key=key.encode() if key is not None else None, keep_tools=keep_tools)
    dst, dataset = output_target(output)
    try:
        with progress_for("anonymize", console=err) as progress:
            result = anonymize_trace(
                trace, dst, options, dataset=dataset, progress=progress, force=force
            )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
    else:
        inexact = f", {result.inexact_segments} not token-exact" if result.inexact_segments else ""
        out.print(
            f"anonymized {result.exchanges} exchanges ({result.segments} distinct segments, "
            f"{result.leaves} texts{inexact}) -> {result.output}",
            markup=False,
        )


@app.command()
@declared_command(ReadOptions)
def convert(
    input_path: Annotated[
        Path,
        trace_argument(
            "agentx trace (file or dataset directory), Weka JSON (file or dir), or Mooncake JSONL",
            metavar="IN",
        ),
    ],
    output: Annotated[
        str,
        typer_option(
            output_flag(
                "file (agentx, mooncake; weka with one session) or directory (weka)"
                + OUTPUT_HELP
                + " (agentx: one file per Weka source file)",
                metavar="FILE|DIR",
            )
        ),
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="agentx|mooncake|weka",
            rich_help_panel=Panel.CONVERSION,
            help="the format to write",
        ),
    ] = "agentx",
    skip_bad: Annotated[
        bool,
        typer.Option(
            "--skip-bad",
            rich_help_panel=Panel.CONVERSION,
            help="skip bad records (Mooncake lines, Weka files) and count them",
        ),
    ] = False,
    with_text: Annotated[
        bool,
        typer.Option(
            "--with-text",
            rich_help_panel=Panel.CONVERSION,
            help="store synthetic text for hash-only rows (Weka, Mooncake) instead of their "
            "block ids alone; replay synthesises it anyway when it sends them",
        ),
    ] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            metavar="N",
            rich_help_panel=Panel.CONVERSION,
            help="processes importing a directory of Weka files",
        ),
    ] = 1,
    json_out: Annotated[bool, json_option("print the summary as JSON")] = False,
    force: Force = False,
    *,
    given: Given,
) -> None:
    """Import (format auto-detected) and export: agentx, Mooncake JSONL, Weka JSON."""
    from agentx.core.progress import progress_for
    from agentx.formats.convert import convert as run_convert

    dst, dataset = output_target(output)
    dataset = dataset and to == "agentx"
    try:
        read = given.build(ReadOptions)
        with progress_for("convert", console=err) as progress:
            result = run_convert(
                input_path,
                dst,
                to=to,
                skip_bad=skip_bad,
                synthesize=with_text,
                dataset=dataset,
                jobs=jobs,
                progress=progress,
                force=force,
                flat_chains=read.split,
            )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
        return
    unit = {"agentx": "exchanges", "mooncake": "lines", "weka": "sessions"}[result.output_format]
    target = f"{result.output} ({result.output_format}{', dataset' if result.dataset else ''})"
    line = f"{result.input} ({result.input_format}) -> {target}: {result.written} {unit}"
    out.print(line, markup=False)
    if result.synthesized:
        out.print(f"synthetic text for {result.synthesized} hash-only exchanges", markup=False)
    if result.skipped_bad:
        err.print(
            f"skipped {result.skipped_bad} bad records; first: {result.first_bad}", markup=False
        )
