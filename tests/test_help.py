"""`--help` of every command: flags show no type, choices and the API key's variable are shown,
bracketed defaults in help texts survive rendering, and capture takes -o/--output (and --out)."""

from __future__ import annotations

import pytest
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
