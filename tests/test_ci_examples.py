"""The CI examples of examples/ci/ run here as far as they can offline: each file validates
against its CI system's schema (check-jsonschema's bundled ones), the nightly GitHub workflow's
steps run in order (its composite action expanded, expressions filled in, the actions that
need GitHub skipped) against serve-sim for three nights: the first measured and saved as the
baseline, the second on the same server passes, the third on a slower serve-sim (a lower
decode speed) fails the gate with exit 3; the GitLab job's script runs and leaves its JUnit
report where the job says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentx.results.baseline import BaselineCheck, Verdict
from agentx.results.junit import JUnitSuite

CI = Path(__file__).parents[1] / "examples" / "ci"
SIM = "--prefill-tps 2000000 --overhead-ms 1 --decode-tps {tps}"
# the workflow's own inputs, but for a quick offline run: few requests, rules the simulated
# slowdown crosses by far and the same server stays well inside
QUICK = {
    "args": "--concurrency 4 --time-scale 0 --max-requests 16 --no-preflight",
    "fail-on": "tpot_p50>+50%",
}
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _env() -> dict[str, str]:
    """This environment's `agentx` first on PATH, no AGENTX_ variables of the caller's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTX_", "GITHUB_"))}
    base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
    return base


def _fill(text: str, context: dict[str, str]) -> str:
    """GitHub's ``${{ a.b || 'default' }}`` with the values of ``context`` (unknown: empty)."""

    def one(m: re.Match[str]) -> str:
        for alt in (a.strip() for a in m[1].split("||")):
            value = alt[1:-1] if alt.startswith("'") else context.get(alt, "")
            if value:
                return value
        return ""

    return _EXPR.sub(one, text)


def _bash(script: str, cwd: Path, env: dict[str, str]) -> int:
    # as GitHub runs a step's `run` with `shell: bash`
    res = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    sys.stderr.write(res.stderr[-4000:])
    return res.returncode


class Runner:
    """The steps of one workflow job, in order, on this machine."""

    def __init__(self, repo: Path, context: dict[str, str]) -> None:
        self.repo, self.context = repo, context
        self.skipped: list[str] = []
        self.uploaded: list[Path] = []

    def job(self, workflow: dict[str, Any], name: str, overrides: dict[str, str]) -> int:
        rc = 0
        for step in workflow["jobs"][name]["steps"]:
            if "run" in step:
                if step["run"].startswith("pip install"):
                    self.skipped.append(step["run"])  # agentx is this checkout's
                    continue
                rc = _bash(_fill(step["run"], self.context), self.repo, self._env(step, {}))
            elif step["uses"].startswith("./"):
                rc = self.composite(self.repo / step["uses"], step, overrides)
            else:
                self.skipped.append(step["uses"])  # checkout, setup-python, cache: GitHub's
            if rc:
                return rc
        return 0

    def _env(self, step: dict[str, Any], context: dict[str, str]) -> dict[str, str]:
        env = _env()
        env.update(self.context.get("env", {}))  # type: ignore[arg-type]
        for k, v in (step.get("env") or {}).items():
            env[k] = _fill(str(v), {**self.context, **context})
        env["GITHUB_STEP_SUMMARY"] = self.context["summary"]
        return env

    def composite(self, where: Path, call: dict[str, Any], overrides: dict[str, str]) -> int:
        action = yaml.safe_load((where / "action.yml").read_text())
        assert action["runs"]["using"] == "composite"
        given = {k: _fill(str(v), self.context) for k, v in (call.get("with") or {}).items()}
        inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
        inputs.update({**given, **overrides})
        ctx = {f"inputs.{k}": v for k, v in inputs.items()}
        ctx["github.action_path"] = str(where)
        failed = 0
        for step in action["runs"]["steps"]:
            if failed and "always()" not in str(step.get("if", "")):
                continue
            if "uses" in step:
                assert step["uses"].startswith("actions/upload-artifact@")
                self.uploaded.append(self.repo / _fill(step["with"]["path"], ctx))
                continue
            output = self.repo / f".output-{step.get('id', 'step')}"
            output.write_text("")
            env = {**self._env(step, ctx), "GITHUB_OUTPUT": str(output)}
            env.update({k: _fill(str(v), self.context) for k, v in (call.get("env") or {}).items()})
            rc = _bash(_fill(step["run"], ctx), self.repo, env)
            for line in output.read_text().splitlines():
                key, _, value = line.partition("=")
                ctx[f"steps.{step['id']}.outputs.{key}"] = value
            failed = failed or rc
        return failed


def _check_json(schema: str, path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    ("schema", "name"),
    [
        ("vendor.github-workflows", "nightly.yml"),
        ("vendor.github-workflows", "github-actions.yml"),
        ("vendor.github-actions", "agentx-bench/action.yml"),
        ("vendor.gitlab-ci", "gitlab-ci.yml"),
    ],
)
def test_each_example_validates_against_its_schema(schema: str, name: str) -> None:
    _check_json(schema, CI / name)


def _repo(tmp_path: Path) -> Path:
    """A repository the examples were copied into as their comments say."""
    repo = tmp_path / "repo"
    shutil.copytree(CI / "agentx-bench", repo / ".github" / "actions" / "agentx-bench")
    shutil.copytree(CI / "agentx-bench", repo / "ci" / "agentx-bench")
    return repo


def test_the_nightly_workflow_passes_on_the_same_server_and_fails_on_a_slower_one(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    workflow = yaml.safe_load((CI / "nightly.yml").read_text())
    summary = tmp_path / "step-summary.md"
    runner = Runner(repo, {"runner.os": "Linux", "summary": str(summary)})
    results = repo / "results" / "bench"

    def night(tps: int) -> int:
        return runner.job(workflow, "bench", {**QUICK, "sim-args": SIM.format(tps=tps)})

    assert night(400) == 0  # no baseline yet: measured, saved as nightly
    assert (repo / "baselines" / "nightly" / "summary.json").is_file()
    assert not (results / "baseline.json").exists()
    assert "actions/cache@v4" in runner.skipped and runner.uploaded == [results]

    assert night(400) == 0
    same = BaselineCheck.from_json(yaml.safe_load((results / "baseline.json").read_text()))
    # passed; on a loaded machine the interval may widen past the threshold: inconclusive,
    # which does not fail the job either
    assert same.passed and Verdict.FAILED not in {c.verdict for c in same.checks}
    assert same.new.labels == (("engine", "serve-sim"), ("runner", "Linux"))

    assert night(100) == 3  # a slower server: the gate step fails the job
    slow = BaselineCheck.from_json(yaml.safe_load((results / "baseline.json").read_text()))
    assert [c.verdict for c in slow.checks] == [Verdict.FAILED]
    suite = JUnitSuite.from_xml((results / "junit.xml").read_text())
    assert suite.failures == 1 and len(runner.uploaded) == 3  # uploaded though it failed
    text = summary.read_text()
    assert text.count("## agentx replay: passed") == 2 and "## agentx replay: failed" in text
    # the failed night kept no baseline: tomorrow is checked against the last passing night
    saved = yaml.safe_load((repo / "baselines" / "nightly" / "summary.json").read_text())
    assert saved["started_at"] == same.new.started_at


def test_the_gitlab_job_runs_its_script_and_leaves_its_junit_report(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    job = yaml.safe_load((CI / "gitlab-ci.yml").read_text())["agentx-nightly"]
    env = {**_env(), **{k: str(v) for k, v in job["variables"].items()}}
    env["AGENTX_SIM_ARGS"] = SIM.format(tps=400)
    for line in job["script"]:
        if line.startswith("pip install"):
            continue
        assert line.startswith("bash ci/agentx-bench/bench.sh")
        assert _bash(line + " --max-requests 8 --no-preflight", repo, env) == 0
    suite = JUnitSuite.from_xml((repo / job["artifacts"]["reports"]["junit"]).read_text())
    assert suite.failures == 0 and suite.cases
    assert all((repo / p).exists() for p in job["artifacts"]["paths"])
    assert (repo / job["cache"]["paths"][0] / "nightly" / "summary.json").is_file()
