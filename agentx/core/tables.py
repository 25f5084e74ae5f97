"""Tables as every command prints them: one style per medium, the one home of that rule.

On a terminal a table is drawn with rich's box (a heavy rule under the header, no outer edge).
Piped or written to a file it is a Markdown pipe table (``| a | b |`` under a ``|---|`` rule),
which pastes into an issue or a pull request as a table, and it is never wrapped: a Markdown row
cut over two lines is two rows, so a table wider than the console takes the width it needs while
the text around it keeps the console's.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table as RichTable

UNBOUNDED = 10_000  # columns a table is measured in to find the width it needs


def plain(console: Console) -> bool:
    """Does ``console`` write to a pipe or a file (not a terminal)?"""
    return not console.is_terminal


class Table(RichTable):
    """A rich table styled for the console it is printed to (see the module docstring)."""

    def __init__(self, *headers: str, **kwargs: Any) -> None:
        kwargs.setdefault("header_style", "bold")
        super().__init__(**kwargs)
        for h in headers:
            self.add_column(h)
        self._headers: list[RenderableType] | None = (
            None  # as given, before a medium joined their lines
        )

    def _style(self, console: Console) -> bool:
        # the medium is known only when the table is printed, so its box is chosen then
        md = plain(console)
        self.box = box.MARKDOWN if md else box.HEAVY_HEAD
        self.show_edge = md
        self.pad_edge = True
        if self._headers is None or len(self._headers) != len(self.columns):
            self._headers = [c.header for c in self.columns]
        for column, header in zip(self.columns, self._headers, strict=True):
            # a header of two lines is two rows of a Markdown table: one line there
            column.header = header.replace("\n", " ") if md and isinstance(header, str) else header
        return md

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        self._style(console)
        return super().__rich_measure__(console, options)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self._style(console):
            need = super().__rich_measure__(console, options.update(width=UNBOUNDED)).maximum
            if need > options.max_width:
                options = options.update(width=need)
        yield from super().__rich_console__(console, options)


def table(*headers: str, title: str | None = None) -> Table:
    """A table with these columns: the first left-aligned and never wrapped, the others
    right-aligned (figures)."""
    t = Table(title=title)
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return t
