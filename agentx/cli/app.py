"""The typer app and what every command shares: consoles, one-line errors, JSON output.

Every ``AgentxError`` becomes one line on stderr and its exit code; no traceback, no locals.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, NoReturn

import typer
import typer.core
from rich.console import Console, ConsoleDimensions
from rich.segment import Segment

from agentx import DISTRIBUTION, __version__
from agentx.core.errors import AgentxError, Interrupted

app = typer.Typer(
    name="agentx",
    help="Capture coding-agent LLM traffic and replay it as load against inference servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
PIPE_WIDTH = 500  # columns of output to a pipe or a file: wide tables are never cut
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)


class PipeConsole(Console):
    """A terminal gets rich's own layout. A pipe or a file gets lines as wide as they need (not
    rich's 80-column default, which cuts table headers) and no trailing padding."""

    def _size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not self.is_terminal and "COLUMNS" not in self._environ:
            return ConsoleDimensions(PIPE_WIDTH, size.height)
        return size  # type: ignore[no-any-return]

    size = property(_size, Console.size.fset)  # type: ignore[attr-defined]

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        text = super()._render_buffer(buffer)
        return text if self.is_terminal else _TRAILING.sub("", text)


def _no_flag_metavar() -> None:
    """typer's help shows ``<bool>`` in the type column of every on/off flag (``--json``,
    ``--salt/--no-salt``): a flag takes no value, so show nothing there."""
    show = typer.core.TyperOption.display_type_rich

    def display_type_rich(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else show(self, ctx)

    typer.core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_no_flag_metavar()
out = PipeConsole(highlight=False)
err = PipeConsole(stderr=True, highlight=False)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"{DISTRIBUTION} {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help=f"print the distribution and version ({DISTRIBUTION} {__version__}) and exit",
        ),
    ] = False,
) -> None:
    pass


BUNDLED_HELP = "; or a bundled example by name: example, weka (see agentx example-path)"
# Every command that writes an output takes it: without it an existing output is refused.
Force = Annotated[
    bool,
    typer.Option("--force", help="replace an existing output (it is kept if the command fails)"),
]


def trace_path(value: Path) -> Path:
    """Callback of every trace argument: a bundled example's name stands for its path."""
    from agentx.core.examples import resolve_trace

    return resolve_trace(value)


def output_target(raw: str) -> tuple[Path, bool]:
    """An ``-o`` value of a command that writes a trace: (path, whether it is a dataset
    directory). A dataset is named by a path ending in ``/``, or is a directory that already
    holds one (its files are added to); any other existing directory is refused as an output."""
    from agentx.store import is_dataset

    path = Path(raw)
    return path, raw.endswith(("/", "\\")) or is_dataset(path)


OUTPUT_HELP = (
    "; a path ending in / (or an existing dataset) is written as a dataset of Parquet files"
)


def fail(exc: AgentxError) -> NoReturn:
    err.print(f"agentx: error: {exc}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def print_json(data: object) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def write_json_file(path: Path, data: object, *, force: bool) -> None:
    import orjson

    from agentx.core.outputs import write_atomic

    write_atomic(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n", force=force)


def main() -> None:
    try:
        app()
    except AgentxError as exc:  # raised outside a command's own handler
        err.print(f"agentx: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except Interrupted as exc:  # a signal replay or sweep turned into an abort
        err.print(f"agentx: {exc}", markup=False, highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("agentx: interrupted")
        sys.exit(130)
