"""Tables in one style per medium: rich's box on a terminal, Markdown pipes in a pipe or a file,
never wrapped; the CLI's consoles wrap text at ``COLUMNS`` (80 when unset) when piped."""

from __future__ import annotations

import io

import pytest
from rich.console import Console, Group
from rich.text import Text
from typer.testing import CliRunner

from agentx.cli import app
from agentx.cli.app import PipeConsole
from agentx.core.tables import table


def sample() -> Group:
    t = table("metric", "a long column header", "b")
    t.add_row("x" * 30, "y" * 40, "z" * 30)
    t.add_row("short", "1", "2")
    return Group(Text("word " * 40), t)


def printed(console: Console, buf: io.StringIO) -> list[str]:
    console.print(sample())
    return buf.getvalue().splitlines()


def test_piped_tables_are_markdown_and_never_cut() -> None:
    buf = io.StringIO()
    lines = printed(PipeConsole(file=buf, width=80), buf)
    rows = [ln for ln in lines if ln.startswith("|")]
    assert len(rows) == 4 and all(ln.endswith("|") for ln in rows)  # header, rule, 2 rows
    assert set(rows[1]) <= set("|-: ")
    assert "x" * 30 in rows[2] and "y" * 40 in rows[2] and "z" * 30 in rows[2]
    assert max(len(ln) for ln in rows) > 80  # wider than the console: whole, not wrapped
    text = [ln for ln in lines if ln.startswith("word")]
    assert len(text) > 1 and all(len(ln) <= 80 for ln in text)  # the text wraps at 80


def test_terminal_tables_are_rich_boxes() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=120, force_terminal=True, color_system=None)
    lines = printed(console, buf)
    assert any("┃" in ln for ln in lines) and any("━" in ln for ln in lines)
    assert not any(ln.startswith("|") for ln in lines)


def test_a_two_line_header_is_one_line_in_markdown() -> None:
    t = table("level", "output\ntokens/s")
    t.add_row("1", "553")
    buf = io.StringIO()
    Console(file=buf, width=80).print(t)
    assert "| level | output tokens/s |" in buf.getvalue()


@pytest.mark.parametrize(("columns", "width"), [(None, 80), ("100", 100)])
def test_piped_width_is_columns_or_80(
    columns: str | None, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert PipeConsole(file=io.StringIO()).width == width


def test_every_command_pipes_the_same_table_style() -> None:
    for args in (["stats", "example"], ["simulate", "example", "--kv-blocks", "64,96"]):
        r = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
        assert r.exit_code == 0, r.output
        rows = [ln for ln in r.stdout.splitlines() if ln.startswith("|")]
        assert rows and all(ln.endswith("|") for ln in rows), args
        assert "┃" not in r.stdout and "━" not in r.stdout
