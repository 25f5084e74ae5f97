"""Numbers beyond any run and API keys that cannot be sent are refused at parse time: one line on
stderr, exit 2, before the endpoint is contacted, and a key is never repeated."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app

DEAD = "http://127.0.0.1:9"  # nothing listens: a case that got past its check would say so
HUGE = "9" * 23
KEY_NBSP = "sk-secret\u00a0value"
KEY_CRLF = "sk-secret\r\nX-Injected: 1"

NUMBERS: dict[str, list[str]] = {
    "max-requests": ["replay", "example", "--endpoint", DEAD, "--max-requests", HUGE],
    "start-at-1e30": ["replay", "example", "--endpoint", DEAD, "--start-at", "1e30"],
    "start-at-nan": ["replay", "example", "--endpoint", DEAD, "--start-at", "nan"],
    "seed": ["replay", "example", "--endpoint", DEAD, "--seed", HUGE],
    "sessions": ["replay", "example", "--endpoint", DEAD, "--sessions", HUGE],
    "sweep-max-requests": [
        "sweep",
        "example",
        "--endpoint",
        DEAD,
        "--concurrency",
        "1",
        "--max-requests",
        HUGE,
        "-o",
        "{tmp}/sw",
    ],
    "simulate-sessions": ["simulate", "example", "--sessions", HUGE],
    "simulate-seed": ["simulate", "example", "--seed", HUGE],
    # a declared range (typer's usage box before): one line too
    "timeout-zero": ["replay", "example", "--endpoint", DEAD, "--timeout", "0"],
}


def _one_line_exit_2(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.stderr.startswith("agentx: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.output
    assert "cannot reach" not in res.stderr  # refused before the endpoint was contacted
    return res.stderr


@pytest.mark.parametrize("case", sorted(NUMBERS))
def test_a_number_beyond_any_run_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    err = _one_line_exit_2([a.replace("{tmp}", str(tmp_path)) for a in NUMBERS[case]])
    flag = next(a for a in NUMBERS[case] if a.startswith("--") and a != "--endpoint")
    if case.startswith("sweep"):
        flag = "--max-requests"
    assert flag in err, err
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("key", [KEY_NBSP, KEY_CRLF], ids=["nbsp", "crlf"])
@pytest.mark.parametrize("command", ["replay", "sweep"])
def test_an_api_key_that_cannot_be_sent_is_refused_unshown(
    key: str, command: str, tmp_path: Path
) -> None:
    args = [command, "example", "--endpoint", DEAD, "--api-key", key]
    if command == "sweep":
        args += ["--concurrency", "1", "-o", str(tmp_path / "sw")]
    err = _one_line_exit_2(args)
    assert "--api-key" in err
    assert "secret" not in err


def test_the_environment_key_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY_NBSP)
    err = _one_line_exit_2(["replay", "example", "--endpoint", DEAD])
    assert "OPENAI_API_KEY" in err and "secret" not in err
