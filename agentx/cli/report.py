"""`agentx report` and `agentx merge`: saved results re-rendered, compared, merged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentx.cli.app import Force, app, err, fail, json_option, out, print_json
from agentx.cli.config import Config
from agentx.cli.declared import Given, declared_command, typer_option
from agentx.core.errors import AgentxError
from agentx.core.options import Panel
from agentx.core.outputs import output_flag
from agentx.core.percentiles import PERCENTILES
from agentx.metrics.cost import CostInputs
from agentx.report.check_options import CheckInputs, TrendInputs

if TYPE_CHECKING:
    from agentx.report.command import ReportOptions


MergeOutput = Annotated[
    Path | None,
    typer_option(
        output_flag(
            "write the merged results directory here (summary.json, requests.parquet, ...)",
            metavar="DIR",
        )
    ),
]
MergeSlo = Annotated[
    str | None,
    typer.Option(
        "--slo",
        metavar="SPEC",
        rich_help_panel=Panel.GATES,
        help="check the merged rows against these SLOs (default: the shards' own --slo); "
        "exit 3 when one fails",
    ),
]


@app.command()
@declared_command(CostInputs, CheckInputs, TrendInputs)
def report(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="DIR",
            help="a results directory (`agentx replay -o`) or a sweep directory (`agentx sweep -o`); "
            "several results directories (the shards of a `replay --shard I/N` split) are merged",
            show_default=False,
        ),
    ],
    compare_dir: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            metavar="DIR",
            rich_help_panel=Panel.REPORT,
            help="a base results directory to diff against",
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            rich_help_panel=Panel.REPORT,
            help="also write a self-contained HTML report here (with --compare: the comparison)",
        ),
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option(
            "--png",
            metavar="DIR",
            rich_help_panel=Panel.REPORT,
            help="also write every chart as DIR/CHART.png",
        ),
    ] = None,
    csv: Annotated[
        Path | None,
        typer.Option(
            "--csv",
            metavar="DIR",
            rich_help_panel=Panel.REPORT,
            help="also write CSV: requests, summary, sessions, turns, time series (sweep: levels)",
        ),
    ] = None,
    output: MergeOutput = None,
    slo: MergeSlo = None,
    json_out: Annotated[
        bool, json_option("print the summary (the agentx.compare/1 diff, the sweep) as JSON")
    ] = False,
    percentiles: Annotated[str | None, typer_option(PERCENTILES)] = None,
    config: Config = None,
    force: Force = False,
    *,
    given: Given,
) -> None:
    """Re-render saved results; --compare diffs against a base run; several dirs are merged."""
    from agentx.core.percentiles import parse_percentiles
    from agentx.report.command import ReportOptions

    try:
        options = ReportOptions(
            results_dirs[0],
            more_dirs=tuple(results_dirs[1:]),
            base_dir=compare_dir,
            html_path=html,
            csv_dir=csv,
            png_dir=png,
            cost=given.build(CostInputs).options(),
            percentiles=None if percentiles is None else parse_percentiles(percentiles),
            output_dir=output,
            slo=slo,
            force=force,
            check=given.build(CheckInputs),
            trend=given.build(TrendInputs).trend,
        )
    except AgentxError as exc:
        fail(exc)
    _report(options, json_out)


@app.command()
@declared_command()
def merge(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="DIR",
            help="results directories of the shards of one `replay --shard I/N` split",
            show_default=False,
        ),
    ],
    output: MergeOutput = None,
    slo: MergeSlo = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            rich_help_panel=Panel.REPORT,
            help="also write the merged HTML report here",
        ),
    ] = None,
    json_out: Annotated[bool, json_option("print the merged summary.json to stdout")] = False,
    force: Force = False,
) -> None:
    """Merge the shards of a `replay --shard I/N` split exactly, from their rows (not averages)."""
    from agentx.report.command import ReportOptions

    _report(
        ReportOptions(
            results_dirs[0],
            more_dirs=tuple(results_dirs[1:]),
            html_path=html,
            output_dir=output,
            slo=slo,
            merge=True,
            force=force,
        ),
        json_out,
    )


def _report(options: ReportOptions, json_out: bool) -> None:
    from agentx.report.command import build_report

    try:
        result = build_report(options)
    except AgentxError as exc:
        fail(exc)
    for warning in result.stderr_warnings(json_out):
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.data.to_json())
    else:
        out.print(result.renderable)
    for path in result.written:
        err.print(f"agentx: wrote {path}", markup=False, highlight=False, soft_wrap=True)
    if result.slo_failed or result.regressed:
        raise typer.Exit(3)
