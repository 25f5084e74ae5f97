"""The wrong kind of input gets the right words: a results or sweep directory (or one of its
files) where a trace goes, a trace where a results directory goes, a path that is not there.
Each is one line naming what was given, what was expected and what to run, exit 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.examples import example_path

DATA = Path(__file__).parents[1] / "results" / "data"  # results dirs a seeded replay wrote
DEAD = "http://127.0.0.1:9"
runner = CliRunner()


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``results/run1`` (a results directory) and ``results/sweep1`` (a sweep directory)."""
    shutil.copytree(DATA / "a", tmp_path / "results" / "run1")
    shutil.copytree(DATA / "sweep", tmp_path / "results" / "sweep1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 1, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("agentx: error: "), r.stderr
    return r.stderr.removeprefix("agentx: error: ").strip()


TRACE_COMMANDS = {
    "replay": ["--endpoint", DEAD],
    "sweep": ["--endpoint", DEAD, "--concurrency", "1", "-o", "out"],
    "stats": [],
    "simulate": [],
    "scrub": ["-o", "clean.parquet"],
    "anonymize": ["-o", "anon.parquet"],
    "convert": ["-o", "t.parquet"],
}


@pytest.mark.parametrize("command", sorted(TRACE_COMMANDS))
def test_a_results_directory_given_as_a_trace(work: Path, command: str) -> None:
    assert _error(command, "results/run1", *TRACE_COMMANDS[command]) == (
        "results/run1 is a results directory (summary.json, requests.parquet), not a trace: "
        "agentx report results/run1"
    )


def test_a_results_file_given_as_a_trace(work: Path) -> None:
    assert _error("replay", "results/run1/requests.parquet", "--endpoint", DEAD) == (
        "results/run1/requests.parquet is the requests.parquet of the results directory "
        "results/run1, not a trace: agentx report results/run1"
    )
    assert _error("stats", "results/run1/summary.json").startswith(
        "results/run1/summary.json is the summary.json of the results directory results/run1"
    )


def test_a_sweep_directory_given_as_a_trace(work: Path) -> None:
    assert _error("replay", "results/sweep1", "--endpoint", DEAD) == (
        "results/sweep1 is a sweep directory (sweep.json), not a trace: agentx report "
        "results/sweep1"
    )


def test_a_trace_given_as_results(work: Path) -> None:
    trace = example_path("example")
    assert _error("report", str(trace)) == (
        f"{trace} is a trace (agentx Parquet), not a results directory: agentx stats {trace}, "
        f"or agentx replay {trace} --endpoint URL to make a results directory"
    )
    weka = example_path("weka")
    assert _error("report", str(weka)).startswith(f"{weka} is a trace (Weka JSON), not a results")
    assert _error("report", "--compare", str(trace), "results/run1").startswith(
        f"{trace} is a trace (agentx Parquet)"
    )


def test_a_bundled_trace_name_given_as_results(work: Path) -> None:
    assert _error("report", "example") == (
        "no such directory: example (example names a bundled example trace: agentx stats "
        "example, or agentx replay example --endpoint URL to make a results directory)"
    )


def test_a_missing_or_empty_directory_given_as_results(work: Path) -> None:
    assert _error("report", "results/run9") == "no such directory: results/run9"
    assert _error("merge", "results/run1", "results/run9") == "no such directory: results/run9"
    (work / "empty").mkdir()
    assert _error("report", "empty") == "empty: no summary.json (not an agentx results directory)"


def test_a_file_of_a_results_directory_given_as_results(work: Path) -> None:
    assert _error("report", "results/run1/requests.parquet") == (
        "results/run1/requests.parquet is the requests.parquet of the results directory "
        "results/run1: agentx report results/run1"
    )
    (work / "notes.txt").write_text("hello\n")
    assert _error("report", "notes.txt") == (
        "notes.txt is a file, not a results directory (a directory holding summary.json, "
        "requests.parquet)"
    )


def test_results_still_read_as_results(work: Path) -> None:
    for path in ("results/run1", "results/run1/summary.json", "results/sweep1"):
        r = runner.invoke(app, ["report", path, "--json"])
        assert r.exit_code == 0, r.output
