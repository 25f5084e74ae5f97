"""`agentx stats` on the command line: the contract's JSON, the table, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from store.test_bad_input import BAD
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.examples import example_path

ROOT = Path(__file__).parents[1]
EXAMPLE = example_path("example")
WEKA = example_path("weka") / "trace_0001.json"
P_KEYS = {"p50", "p90", "p99", "mean", "max"}

runner = CliRunner()


def test_json_has_the_contract_keys() -> None:
    res = runner.invoke(app, ["stats", str(EXAMPLE), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schema"] == "agentx.stats/1"
    assert isinstance(data["sessions"], int) and data["sessions"] >= 4
    assert data["threads"] > data["sessions"]  # a subagent and a side call
    assert data["requests"] == sum(data["apis"].values())
    assert {"anthropic.messages", "openai.chat", "openai.responses"} <= set(data["apis"])
    for key in ("input_tokens", "output_tokens", "think_time_s"):
        assert set(data[key]) == P_KEYS
    assert 0.0 < data["theoretical_hit_rate"] < 1.0
    assert data["block_size"] == 16


def test_block_size_option() -> None:
    res = runner.invoke(app, ["stats", str(EXAMPLE), "--json", "--block-size", "64"])
    assert res.exit_code == 0 and json.loads(res.stdout)["block_size"] == 64
    res = runner.invoke(app, ["stats", str(WEKA), "--json", "--block-size", "128"])
    assert json.loads(res.stdout)["block_size"] == 128  # a multiple of the file's 64
    res = runner.invoke(app, ["stats", str(EXAMPLE), "--block-size", "0"])
    assert res.exit_code == 2  # usage error


def test_table_by_default() -> None:
    res = runner.invoke(app, ["stats", str(WEKA)])
    assert res.exit_code == 0
    assert "theoretical hit rate" in res.stdout and "block size 64" in res.stdout
    assert "p99" in res.stdout


FLAT = ROOT / "tests" / "formats" / "data" / "weka-flat"


def test_the_split_of_flat_agents_in_json_and_the_table() -> None:
    res = runner.invoke(app, ["stats", str(FLAT), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["flat_chains"] == {  # the harness's counts of these traces (HARNESS_READING)
        "traces_split": 3,
        "chains": 9,
        "agents": 5,
        "sidecars": 0,
        "reductions": 2,
        "worker_group": 2,
        "seams_merged": 29,
        "empty_hash_on_main": 0,
    }
    assert data["threads"] == 3 + 9
    off = json.loads(
        runner.invoke(app, ["stats", str(FLAT), "--json", "--flat-chains", "off"]).stdout
    )
    assert (off["flat_chains"], off["threads"], off["requests"]) == (None, 3, data["requests"])
    assert (
        json.loads(runner.invoke(app, ["stats", str(EXAMPLE), "--json"]).stdout)["flat_chains"]
        is None
    )  # an agentx capture: no split made
    table = runner.invoke(app, ["stats", str(FLAT)], env={"COLUMNS": "200"}).stdout
    assert "3 traces split into 9 more chains (5 agents, 0 sidecars, 2 reductions, 2" in table
    assert runner.invoke(app, ["stats", str(FLAT), "--flat-chains", "maybe"]).exit_code == 2


def _one_line_error(res: object) -> str:
    stderr: str = res.stderr  # type: ignore[attr-defined]
    assert res.exit_code == 1, stderr  # type: ignore[attr-defined]
    assert stderr.startswith("agentx: error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr and res.stdout == ""  # type: ignore[attr-defined]
    return stderr


@pytest.mark.parametrize("case", list(BAD))
def test_bad_traces_exit_1_with_one_line(tmp_path: Path, case: str) -> None:
    make, _ = BAD[case]
    path = make(tmp_path)
    _one_line_error(runner.invoke(app, ["stats", str(path)]))


def test_bad_imports_exit_1_with_one_line(tmp_path: Path) -> None:
    weka = tmp_path / "bad.json"
    weka.write_text('{"block_size": 64, "requests": [{"t": 0, "in": "lots"}]}')
    assert "requests[0].in" in _one_line_error(runner.invoke(app, ["stats", str(weka)]))
    moon = tmp_path / "bad.jsonl"
    moon.write_text('{"timestamp": 0, "input_length": 5}\n{"timestamp": 1, "input_length": -5}\n')
    assert "record 2" in _one_line_error(runner.invoke(app, ["stats", str(moon)]))
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert "unrecognised format" in _one_line_error(runner.invoke(app, ["stats", str(text)]))


def test_real_process_exit_code_and_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(EXAMPLE.read_bytes()[: EXAMPLE.stat().st_size // 2])
    proc = subprocess.run(
        [sys.executable, "-m", "agentx", "stats", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr
