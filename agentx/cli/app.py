"""The typer app and what every command shares: consoles, one-line errors, JSON output.

Every ``AgentxError`` becomes one line on stderr and its exit code; no traceback, no locals.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core
from rich.console import Console, RenderableType
from rich.segment import Segment

from agentx import DISTRIBUTION, __version__
from agentx.cli.declared import typer_option
from agentx.core.errors import AgentxError, Interrupted
from agentx.core.options import Panel
from agentx.core.outputs import FORCE

if TYPE_CHECKING:
    from rich.table import Table

app = typer.Typer(
    name="agentx",
    help="Capture coding-agent LLM traffic and replay it as load against inference servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)


class PipeConsole(Console):
    """A terminal gets rich's own layout. A pipe or a file gets text wrapped at ``COLUMNS`` (80
    when it is not set), no trailing padding, and tables whole: a table wider than that
    (:mod:`agentx.core.tables`) is printed at its own width rather than cut."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal:
            kwargs.setdefault("crop", False)
        super().print(*objects, **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        text = super()._render_buffer(buffer)
        return text if self.is_terminal else _TRAILING.sub("", text)


def _help_layout() -> None:
    """What typer's help shows, made to show what a user types:

    - the type column of an on/off flag (``--json``, ``--salt/--no-salt``) is empty, not
      ``<bool>``: a flag takes no value; an argument's is empty too (its name, a metavar such as
      ``TRACE``, says what to give);
    - an option's range (``[x>=1]``) is not appended to its metavar (``N``): a value out of range
      is refused with the range;
    - the option-name columns are never cut (``--trace-idle-c…`` at 80 columns): the help text
      wraps instead.
    """
    show = typer.core.TyperOption.display_type_rich

    def display_type_rich(self: typer.core.TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else show(self, ctx)

    def no_type(self: typer.core.TyperArgument, ctx: typer.Context) -> str | None:
        return None

    def no_range(self: object) -> str | None:
        return None

    typer.core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]
    typer.core.TyperArgument.display_type_rich = no_type  # type: ignore[method-assign,assignment]
    typer.core.TyperOption._get_number_range_help_str = no_range  # type: ignore[method-assign]
    typer.core.TyperArgument._get_number_range_help_str = no_range  # type: ignore[method-assign]
    for cls in (typer.core.TyperCommand, typer.core.TyperGroup):
        cls.format_help = _with_help_tables(cls.format_help)  # type: ignore[method-assign]


def _with_help_tables(format_help: Callable[..., None]) -> Callable[..., None]:
    """``format_help`` that first gives typer's rich help its tables (typer loads that module
    only to show a help, and so does this)."""

    def wrapped(self: Any, ctx: Any, formatter: Any) -> None:
        import typer.rich_utils

        typer.rich_utils.Table = _help_table()  # type: ignore[attr-defined]
        format_help(self, ctx, formatter)

    return wrapped


@functools.cache
def _help_table() -> type[Table]:
    from rich.table import Table

    class HelpTable(Table):
        """A table built row by row (typer's options panel) keeps every column but the last
        (the help text) whole; a table with columns of its own is left as it is."""

        def add_row(self, *renderables: RenderableType | None, **kwargs: Any) -> None:
            if not self.columns:
                for _ in renderables[:-1]:
                    self.add_column(no_wrap=True)
                self.add_column(ratio=1, overflow="fold")
            super().add_row(*renderables, **kwargs)

    return HelpTable


_help_layout()
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
Force = Annotated[bool, typer_option(FORCE)]


def trace_path(value: Path) -> Path:
    """Callback of every trace argument: a bundled example's name stands for its path."""
    from agentx.core.examples import resolve_trace

    return resolve_trace(value)


def trace_argument(help: str, *, metavar: str = "TRACE") -> Any:
    """A trace argument: a path, or a bundled example's name."""
    return typer.Argument(
        metavar=metavar, help=help + BUNDLED_HELP, callback=trace_path, show_default=False
    )


def json_option(help: str) -> Any:
    """``--json``: what the command prints instead of its table."""
    return typer.Option("--json", help=help, rich_help_panel=Panel.OUTPUT)


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
