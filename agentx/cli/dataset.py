"""``agentx dataset pack|verify|push``: shareable trace datasets (:mod:`agentx.dataset`)."""

from __future__ import annotations

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
    trace_path,
)
from agentx.cli.declared import Given, declared_command
from agentx.core.errors import AgentxError
from agentx.core.options import Panel
from agentx.dataset.options import PackOptions, PushOptions

dataset_app = typer.Typer(
    help="Share trace datasets: pack traces as a Hugging Face dataset, verify one, push it.",
    no_args_is_help=True,
)
app.add_typer(dataset_app, name="dataset")


def _traces(values: list[Path]) -> list[Path]:
    return [trace_path(v) for v in values]


@dataset_app.command()
@declared_command(PackOptions)
def pack(
    traces: Annotated[
        list[Path],
        typer.Argument(
            metavar="TRACES...",
            help="traces to pack, in order: agentx (file or dataset directory), Weka, "
            "Mooncake, a Hugging Face dataset of Weka rows; or a bundled example by name",
            callback=_traces,
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            metavar="DIR",
            rich_help_panel=Panel.OUTPUT,
            help="the dataset directory to write (new, empty, or a packed one with --force)",
        ),
    ],
    json_out: Annotated[bool, json_option("print the manifest (agentx.dataset/1)")] = False,
    force: Force = False,
    *,
    given: Given,
) -> None:
    """Pack traces as a Hugging Face dataset: configs of agentx trace files, Weka and Mooncake
    exports, a card with plots, a manifest of checksums. Refuses secrets, original text
    (without --with-text) and rows scrub would drop."""
    from agentx.core.progress import progress_for
    from agentx.dataset.pack import pack as run_pack

    try:
        options = given.build(PackOptions)
        with progress_for("pack", console=err) as progress:
            manifest = run_pack(traces, output, options, force=force, progress=progress)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(manifest.to_json())
        return
    s = manifest.stats
    rate = "-" if s.theoretical_hit_rate is None else f"{s.theoretical_hit_rate:.1%}"
    configs = ", ".join(f"{c.name} ({c.rows:,} rows)" for c in manifest.configs)
    out.print(
        f"packed {s.sessions:,} sessions, {s.requests:,} requests -> {output} "
        f"(theoretical hit rate {rate}); configs: {configs}",
        markup=False,
        soft_wrap=True,
    )


@dataset_app.command()
def verify(
    dataset: Annotated[
        str,
        typer.Argument(
            metavar="DIR|hf://datasets/ORG/NAME@REV",
            help="a packed directory, or a hub repository (pin the revision)",
            show_default=False,
        ),
    ],
    json_out: Annotated[bool, json_option("print the agentx.dataset-verify/1 report")] = False,
) -> None:
    """Check a packed dataset: every file's checksum, every config's schema and counts, the
    statistics and the card recomputed from the data. Exit 1 with what differs."""
    from agentx.core.progress import progress_for
    from agentx.dataset.verify import verify as run_verify

    try:
        with progress_for("verify", console=err) as progress:
            report = run_verify(dataset, progress=progress)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(report.to_json())
    elif report.ok:
        rev = f" at {report.revision}" if report.revision else ""
        out.print(
            f"{dataset}{rev}: verified ({report.files_checked} files, "
            f"{report.rows_checked:,} rows)",
            markup=False,
            soft_wrap=True,
        )
    else:
        for line in report.differences:
            out.print(line, markup=False, soft_wrap=True)
    if not report.ok:
        err.print(
            f"agentx: error: {dataset}: {len(report.differences)} differences",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


@dataset_app.command()
@declared_command(PushOptions)
def push(
    directory: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="a packed directory (verified first)"),
    ],
    *,
    given: Given,
) -> None:
    """Upload a packed directory to the Hugging Face hub (token: HF_TOKEN or the cached login;
    HF_ENDPOINT for another hub) and print the revision to pin."""
    from agentx.dataset.push import push as run_push

    try:
        pushed = run_push(directory, given.build(PushOptions))
    except AgentxError as exc:
        fail(exc)
    out.print(f"pushed {directory} -> {pushed.url}", markup=False, soft_wrap=True)
    out.print(pushed.pinned, markup=False, soft_wrap=True)
