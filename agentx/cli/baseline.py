"""``agentx baseline save|list``: results directories kept as baselines
(:mod:`agentx.report.baseline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli.app import Force, app, err, fail, json_option, out, print_json
from agentx.cli.declared import Given, declared_command
from agentx.core.errors import AgentxError
from agentx.report.check_options import BaselineStore

baseline_app = typer.Typer(
    help="Keep results directories as baselines that replay and report --baseline check against.",
    no_args_is_help=True,
)
app.add_typer(baseline_app, name="baseline")


@baseline_app.command()
@declared_command(BaselineStore)
def save(
    run: Annotated[
        Path, typer.Argument(metavar="RUN", help="a results directory (agentx replay -o)")
    ],
    name: Annotated[str, typer.Argument(metavar="NAME", help="the baseline's name")],
    force: Force = False,
    *,
    given: Given,
) -> None:
    """Save a results directory as the baseline NAME (copied into --dir)."""
    from agentx.report.baseline import save_baseline

    try:
        target = save_baseline(run, name, given.build(BaselineStore).store, force=force)
    except AgentxError as exc:
        fail(exc)
    err.print(f"agentx: saved baseline {target}", markup=False, highlight=False, soft_wrap=True)


@baseline_app.command("list")
@declared_command(BaselineStore)
def list_(
    json_out: Annotated[bool, json_option("print the baselines as JSON")] = False,
    *,
    given: Given,
) -> None:
    """List the saved baselines, oldest first, with what a check compares."""
    from agentx.core.tables import table
    from agentx.report.baseline import identity, list_baselines

    store = given.build(BaselineStore).store
    try:
        found = [(name, identity(s, store / name)) for name, s in list_baselines(store)]
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json([{"name": n, **i.to_json()} for n, i in found])
        return
    t = table("name", "started", "trace", "server", "concurrency", "scenario", "labels")
    for n, i in found:
        t.add_row(
            n,
            i.started_at or "",
            (i.trace_fingerprint or "unknown")[:12],
            i.server_kind or "",
            "" if i.concurrency is None else str(i.concurrency),
            i.scenario or "",
            ",".join(f"{k}={v}" for k, v in i.labels),
        )
    out.print(t)
