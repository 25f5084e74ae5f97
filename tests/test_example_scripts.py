"""The runnable examples in examples/ run here, against serve-sim on 127.0.0.1, with quick
settings, so they cannot rot: the SLO gate passes and fails with the right exit codes, the
capture-then-replay script records a (scripted) agent and replays it, and the DuckDB analysis
agrees with summary.json."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.server import SimServer

EXAMPLES = Path(__file__).parents[1] / "examples"
QUICK = ["--concurrency", "4", "--time-scale", "0", "--max-requests", "12"]

# The "agent" for capture-then-replay: three turns of a growing chat through the base URL that
# `agentx capture -- CMD` hands the agent.
AGENT = """
import os, httpx
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
messages = [{"role": "system", "content": "You are a coding agent. " * 200}]
for turn in range(3):
    messages.append({"role": "user", "content": f"step {turn}: run the tests and fix what fails"})
    body = {"model": "agentx-sim", "messages": messages, "max_tokens": 16}
    reply = httpx.post(url, json=body, timeout=30).raise_for_status().json()
    messages.append(reply["choices"][0]["message"])
"""


def env(**extra: str) -> dict[str, str]:
    """This environment's `agentx` first on PATH (the scripts call `agentx`)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTX_")}
    base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
    return {**base, **extra}


def bash(script: str, *args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(EXAMPLES / script), *args],
        cwd=cwd,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig.of(port=0, fast=True)) as server:
        yield server


@pytest.fixture(scope="module")
def gated(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The SLO gate with its own serve-sim (AGENTX_ENDPOINT unset) and the default checks."""
    cwd = tmp_path_factory.mktemp("gate")
    res = bash("ci/slo-gate.sh", *QUICK, cwd=cwd, AGENTX_SIM_ARGS="--fast")
    return res, cwd / "results" / "slo-gate"


def test_slo_gate_passes(gated: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    res, results = gated
    assert res.returncode == 0, res.stderr
    summary = json.loads((results / "summary.json").read_text())
    assert summary["slo"]["passed"] is True
    assert [c["metric"] for c in summary["slo"]["checks"]] == ["ttft_p99", "itl_p50", "error_rate"]
    assert summary["requests"]["ok"] == 12
    assert "every SLO check passed" in res.stderr


def test_slo_gate_fails_the_job_with_exit_3(sim: SimServer, tmp_path: Path) -> None:
    res = bash(
        "ci/slo-gate.sh",
        *QUICK,
        cwd=tmp_path,
        AGENTX_ENDPOINT=sim.url,
        AGENTX_SLO="ttft_p50<=1us",
        AGENTX_RESULTS="out",
    )
    assert res.returncode == 3, res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["slo"]["passed"] is False and summary["endpoint"] == sim.url
    assert "an SLO check failed" in res.stderr


def test_the_workflow_runs_the_gate_script_with_its_variables() -> None:
    workflow = (EXAMPLES / "ci" / "github-actions.yml").read_text()
    script = (EXAMPLES / "ci" / "slo-gate.sh").read_text()
    (run,) = re.findall(r"run: bash (\S+)", workflow)
    assert (EXAMPLES / run).is_file()  # relative to the repository the files are copied into
    for name in set(re.findall(r"\b(AGENTX_\w+):", workflow)):
        assert f"${{{name}" in script, name
    assert "pip install agentx-replay" in workflow


def test_capture_then_replay(sim: SimServer, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    res = bash(
        "capture-then-replay.sh",
        "--",
        sys.executable,
        str(agent),
        cwd=tmp_path,
        AGENTX_UPSTREAM=sim.url,
        AGENTX_SIM_ARGS="--fast",
        AGENTX_REPLAY_ARGS="--time-scale 0",
    )
    assert res.returncode == 0, res.stderr
    work = tmp_path / "agentx-run"
    assert json.loads((work / "scrub.json").read_text())["exchanges"]["out"] == 3
    summary = json.loads((work / "results" / "summary.json").read_text())
    assert (summary["requests"]["total"], summary["requests"]["ok"]) == (3, 3)
    assert summary["cache"]["theoretical_hit_rate"] > 0.5  # the growing conversation
    assert (work / "report.html").is_file()


def test_capture_then_replay_wants_an_agent(tmp_path: Path) -> None:
    res = bash("capture-then-replay.sh", cwd=tmp_path)
    assert res.returncode == 2 and "capture-then-replay.sh --" in res.stderr


def test_duckdb_analysis_agrees_with_the_summary(
    gated: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    _, results = gated
    res = subprocess.run(
        [sys.executable, str(EXAMPLES / "analyze_results.py"), str(results), "--csv", tmp_path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((results / "summary.json").read_text())
    assert f"measured by agentx {summary['agentx_version']}" in res.stdout
    with open(tmp_path / "by_turn.csv") as fh:
        by_turn = list(csv.DictReader(fh))
    assert sum(int(r["requests"]) for r in by_turn) == summary["requests"]["ok"]
    with open(tmp_path / "by_session.csv") as fh:
        sessions = list(csv.DictReader(fh))
    assert sum(int(r["prompt_tokens"]) for r in sessions) == summary["tokens"]["input"]
    assert (tmp_path / "errors.csv").read_text().splitlines() == ["error_type,requests,example"]


def test_analysis_refuses_a_directory_without_results(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(EXAMPLES / "analyze_results.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1 and "not an agentx results directory" in res.stderr
