"""`--help` of every command: flags show no type, choices and the API key's variable are shown,
bracketed defaults in help texts survive rendering, capture takes -o/--output (and --out), every
option sits in a help panel with a metavar a user types, `-h` is `--help`, and option names are
never cut at 80 columns."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from agentx.cli import app

runner = CliRunner()
COMMANDS = [c.name or c.callback.__name__ for c in app.registered_commands if c.callback]


def help_of(command: str) -> str:
    r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("command", sorted(c.replace("_", "-") for c in COMMANDS))
def test_no_type_on_flags(command: str) -> None:
    assert "<bool>" not in help_of(command)


def test_replay_help_shows_defaults_choices_and_env() -> None:
    text = help_of("replay")
    assert "[default: the endpoint's first model]" in text  # not eaten as markup
    assert "[default: ENDPOINT/metrics when it answers]" in text
    assert "recorded|live" in text and "chat|messages|native" in text
    assert "env var: OPENAI_API_KEY" in text
    assert "Cost and margin" in text and "--gpu-hour-cost" in text


def test_report_help_escapes_brackets() -> None:
    text = help_of("report")
    assert "[COMMAND] and [cost] sections" in text and "[price.NAME] tables" in text


@pytest.mark.parametrize("flag", ["-o", "--output", "--out"])
def test_capture_output_flags(flag: str) -> None:
    r = runner.invoke(app, ["capture", flag, "x.parquet", "--print-addon-path"])
    assert r.exit_code == 0, r.output


COMMAND_OBJECTS = typer.main.get_command(app).commands  # type: ignore[attr-defined]


def _options(command: str) -> list[Any]:
    return [p for p in COMMAND_OBJECTS[command].params if p.param_type_name == "option"]


@pytest.mark.parametrize("command", ["replay", "sweep", "simulate", "serve-sim"])
def test_every_option_name_is_whole_at_80_columns(command: str) -> None:
    r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0, r.output
    names = [n for p in _options(command) if not p.hidden for n in (*p.opts, *p.secondary_opts)]
    cut = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", r.output)]
    assert names and not cut, f"cut or missing at 80 columns: {cut}"


@pytest.mark.parametrize("command", sorted(COMMAND_OBJECTS))
def test_every_option_is_in_a_help_panel_and_h_is_help(command: str) -> None:
    loose = [
        p.opts
        for p in _options(command)
        if not p.hidden and "--help" not in p.opts and not getattr(p, "rich_help_panel", None)
    ]
    assert not loose, loose
    r = runner.invoke(app, [command, "-h"], env={"COLUMNS": "200"}, terminal_width=200)
    assert r.exit_code == 0 and "Usage:" in r.output, r.output


@pytest.mark.parametrize("command", sorted(COMMAND_OBJECTS))
def test_metavars_are_what_a_user_types(command: str) -> None:
    text = help_of(command)
    internals = re.findall(r"<\w+(?: range)?(?:\[\w+\])?>|\[(?:\d\S*<=)?x[<>]=", text)
    assert not internals, internals


def test_renamed_flags_keep_a_hidden_alias() -> None:
    text = help_of("simulate")
    assert "--cache-model" in text and "--engine " not in text
    (engine,) = [p for p in _options("simulate") if "--engine" in p.opts]
    assert engine.hidden
