"""The command line: parse, call one library function, render. Nothing else lives here.

Every ``AgentxError`` becomes one line on stderr and its exit code; no traceback, no locals.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from agentx.errors import AgentxError

app = typer.Typer(
    name="agentx",
    help="Capture coding-agent LLM traffic and replay it as load against inference servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def fail(exc: AgentxError) -> NoReturn:
    err.print(f"agentx: error: {exc}", markup=False, highlight=False)
    raise typer.Exit(exc.exit_code)


def print_json(data: object) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


@app.command()
def stats(
    trace: Annotated[Path, typer.Argument(help="agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL")],
    json_out: Annotated[bool, typer.Option("--json", help="print the agentx.stats/1 object")] = False,
    block_size: Annotated[int, typer.Option("--block-size", min=1, help="prefix-cache block size in tokens")] = 16,
) -> None:
    """Sessions, threads, requests, token and think-time distributions, theoretical hit rate."""
    from agentx import stats as stats_mod

    try:
        result = stats_mod.compute_stats(trace, block_size=block_size)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result)
    else:
        out.print(stats_mod.render_table(result))


def main() -> None:
    try:
        app()
    except AgentxError as exc:  # raised outside a command's own handler
        err.print(f"agentx: error: {exc}", markup=False, highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("agentx: interrupted")
        sys.exit(130)
