"""examples/kubernetes, examples/slurm and the Dockerfile, checked offline.

- Kubernetes: every manifest passes the API's own JSON schemas, strictly (unknown fields fail),
  for the oldest and newest Kubernetes that `kubernetes-validate` bundles; the manifests agree
  with each other (shard count, volume, config, user); then the shard pods' and the merge pod's
  shell commands, taken from the manifests, run here for every JOB_COMPLETION_INDEX against
  serve-sim, and the merged summary covers every shard.
- SLURM: shellcheck; shards.sbatch runs for every array index set by hand (sourcing
  run_shard.sh, with a --start-at barrier), then merge.sbatch; submit.sh is run with a stand-in
  `sbatch` that records its arguments (an array 0..N-1, then a merge with afterok on it).
- Dockerfile: hadolint; the build context the .dockerignore lets through builds the wheel.
  The image itself is not built here: its base (python:3.12-slim) comes from Docker Hub, which
  this machine cannot reach (only PyPI, Debian and npm are).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from agentx.serve_sim import SimConfig
from agentx.serve_sim.process import SimProcess

ROOT = Path(__file__).parents[1]
K8S = ROOT / "examples" / "kubernetes"
SLURM = ROOT / "examples" / "slurm"
BIN = Path(sys.executable).parent
QUICK = "--time-scale 0 --concurrency 2"


def env(**extra: str) -> dict[str, str]:
    """This environment's `agentx` first on PATH (the scripts call `agentx`)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTX_", "SLURM_"))}
    base["PATH"] = f"{BIN}{os.pathsep}{base.get('PATH', '')}"
    return {**base, **extra}


def summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "summary.json").read_text())
    return data


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess(SimConfig.of(port=0, fast=True)) as server:
        yield server


# -- Kubernetes --------------------------------------------------------------------------------


def manifests() -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return out


def versions() -> list[str]:
    bundled = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    found = sorted(
        (tuple(int(x) for x in p.name[1:].split("-")[0].split(".")) for p in bundled.iterdir()),
    )
    return [".".join(map(str, found[0])), ".".join(map(str, found[-1]))]


@pytest.mark.parametrize("version", versions())
def test_manifests_pass_the_kubernetes_schemas(version: str) -> None:
    docs = manifests()
    assert set(docs) == {
        "PersistentVolumeClaim/agentx-results",
        "ConfigMap/agentx-run",
        "Job/agentx-shards",
        "Job/agentx-merge",
        "Pod/agentx-results",
    }
    for name, doc in docs.items():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name} against Kubernetes {version}: {exc}")


def test_the_validator_catches_a_misspelt_field() -> None:
    job = manifests()["Job/agentx-shards"]
    bad = {**job, "spec": {**job["spec"], "completionMod": "Indexed"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, versions()[-1], strict=True)


def container(doc: dict[str, Any]) -> dict[str, Any]:
    (c,) = doc["spec"]["template"]["spec"]["containers"]
    return dict(c)


def test_manifests_agree_with_each_other_and_the_dockerfile() -> None:
    docs = manifests()
    shards, merge = docs["Job/agentx-shards"], docs["Job/agentx-merge"]
    spec = shards["spec"]
    assert spec["completionMode"] == "Indexed"
    env_shards = {e["name"]: e.get("value") for e in container(shards)["env"]}["SHARDS"]
    assert spec["completions"] == spec["parallelism"] == int(env_shards)
    uid = next(
        line.split()[1].split(":")[0]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("USER ")
    )
    for job in (shards, merge):
        pod = job["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(uid)
        claims = {
            v["persistentVolumeClaim"]["claimName"]
            for v in pod["volumes"]
            if "persistentVolumeClaim" in v
        }
        assert claims == {"agentx-results"}
        assert container(job)["envFrom"] == [{"configMapRef": {"name": "agentx-run"}}]
        assert container(job)["image"] == container(shards)["image"]
    script = container(shards)["args"][0]
    assert "$JOB_COMPLETION_INDEX/$SHARDS" in script and "exec agentx replay" in script
    assert '"/results/$RUN"/shard-*' in container(merge)["args"][0]


def run_pod(doc: dict[str, Any], results: Path, **extra: str) -> subprocess.Popen[str]:
    """The container's command, here: its shell script with the ConfigMap's and the manifest's
    variables, /results moved to a temporary directory."""
    c = container(doc)
    config = manifests()["ConfigMap/agentx-run"]["data"]
    variables = {e["name"]: e["value"] for e in c.get("env", ()) if "value" in e}
    script = c["args"][0].replace("/results/", f"{results}/")
    assert c["command"][:2] == ["/bin/sh", "-c"]
    return subprocess.Popen(
        ["sh", "-c", script],
        env=env(**{**config, **variables, **extra}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_pods_commands_run_every_shard_and_merge_them(sim: SimProcess, tmp_path: Path) -> None:
    docs = manifests()
    shards = docs["Job/agentx-shards"]
    n = int(shards["spec"]["completions"])
    procs = [
        run_pod(shards, tmp_path, JOB_COMPLETION_INDEX=str(i), ENDPOINT=sim.url, REPLAY_ARGS=QUICK)
        for i in range(n)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * n, [e for _, e in outs]
    merge = run_pod(docs["Job/agentx-merge"], tmp_path)
    _, err = merge.communicate(timeout=120)
    assert merge.returncode == 0, err
    run = docs["ConfigMap/agentx-run"]["data"]["RUN"]
    merged = summary(tmp_path / run / "merged")
    assert [m["shard"] for m in merged["merged_from"]] == [f"{i}/{n}" for i in range(n)]
    assert merged["requests"]["total"] == sum(
        summary(tmp_path / run / f"shard-{i}")["requests"]["total"] for i in range(n)
    )
    assert merged["requests"]["total"] == 48  # the bundled example, every session once


# -- SLURM -------------------------------------------------------------------------------------


def test_slurm_scripts_pass_shellcheck() -> None:
    scripts = sorted([*SLURM.glob("*.sh"), *SLURM.glob("*.sbatch")])
    res = subprocess.run(
        [BIN / "shellcheck", "-x", *scripts], capture_output=True, text=True, cwd=SLURM
    )
    assert res.returncode == 0, res.stdout


def test_the_array_tasks_and_the_merge_step_run_with_the_index_set_by_hand(
    sim: SimProcess, tmp_path: Path
) -> None:
    n = 2
    results = tmp_path / "run"
    start_at = time.time() + 4  # the barrier the array tasks share
    common = {
        "SLURM_SUBMIT_DIR": str(SLURM),
        "SLURM_ARRAY_TASK_COUNT": str(n),
        "AGENTX_ENDPOINT": sim.url,
        "AGENTX_RESULTS": str(results),
        "AGENTX_START_AT": f"{start_at}",
        "AGENTX_REPLAY_ARGS": f"{QUICK} --warmup 1",  # each shard warms its own 2 lanes
    }
    procs = [
        subprocess.Popen(
            ["bash", str(SLURM / "shards.sbatch")],
            env=env(**common, SLURM_ARRAY_TASK_ID=str(i)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for i in range(n)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * n, [e for _, e in outs]
    assert all("--start-at" in err for _, err in outs)
    res = subprocess.run(
        ["bash", str(SLURM / "merge.sbatch")],
        env=env(**common),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    merged = summary(results / "merged")
    assert [m["shard"] for m in merged["merged_from"]] == ["0/2", "1/2"]
    assert [summary(results / f"shard-{i}")["requests"]["warmup"] for i in range(n)] == [2, 2]
    assert merged["requests"]["warmup"] == 4
    assert merged["requests"]["total"] == 48 - 4
    starts = [summary(results / f"shard-{i}")["clock"]["wall_ns"] / 1e9 for i in range(n)]
    assert min(starts) >= start_at


def test_run_shard_refuses_to_run_outside_an_array_task(tmp_path: Path) -> None:
    res = subprocess.run(
        ["bash", str(SLURM / "run_shard.sh")], env=env(), capture_output=True, text=True
    )
    assert res.returncode != 0
    assert "SLURM_ARRAY_TASK_ID" in res.stderr


FAKE_SBATCH = """#!/usr/bin/env bash
n=$(wc -l < "$SBATCH_LOG" 2>/dev/null || echo 0)
printf '%s\\n' "$*" >> "$SBATCH_LOG"
env | grep '^AGENTX_' | sort > "$SBATCH_LOG.env.$n"
echo "$((4242 + n));cluster1"
"""


def test_submit_sends_an_array_then_a_merge_after_it(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text(FAKE_SBATCH)
    (fake / "sbatch").chmod(0o755)
    log = tmp_path / "sbatch.log"
    before = time.time()
    res = subprocess.run(
        ["bash", str(SLURM / "submit.sh"), "4"],
        env=env(
            PATH=f"{fake}{os.pathsep}{env()['PATH']}",
            SBATCH_LOG=str(log),
            AGENTX_ENDPOINT="http://gpu-node:8000",
            AGENTX_START_DELAY="90",
        ),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    array, merge = log.read_text().splitlines()
    assert array.split() == [
        "--parsable",
        "--array=0-3",
        "--export=ALL",
        str(SLURM / "shards.sbatch"),
    ]
    assert merge.split() == [
        "--parsable",
        "--dependency=afterok:4242",
        "--export=ALL",
        str(SLURM / "merge.sbatch"),
    ]
    exported = dict(
        line.split("=", 1) for line in (tmp_path / "sbatch.log.env.0").read_text().splitlines()
    )
    assert exported["AGENTX_SHARDS"] == "4"
    assert exported["AGENTX_SLURM_DIR"] == str(SLURM)
    assert Path(exported["AGENTX_RESULTS"]).parent == tmp_path / "results"
    assert before + 89 <= int(exported["AGENTX_START_AT"]) <= time.time() + 91
    assert "job 4242" in res.stdout and "job 4243" in res.stdout


# -- Dockerfile --------------------------------------------------------------------------------


def test_dockerfile_passes_hadolint() -> None:
    res = subprocess.run([BIN / "hadolint", "Dockerfile"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_dockerfile_runs_agentx_as_a_non_root_user() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    final = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")) :]
    assert any(ln.startswith("USER 10001") for ln in final)
    assert 'ENTRYPOINT ["agentx"]' in final
    assert any("pip install --no-cache-dir /wheels/*.whl" in ln for ln in final)


def build_context(dest: Path) -> list[str]:
    """The files `docker build .` sends, by the .dockerignore's rules (last match wins)."""
    rules = [
        ln.strip()
        for ln in (ROOT / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.split()
    sent = []
    for rel in tracked:
        keep = True
        for rule in rules:
            negate = rule.startswith("!")
            pattern = rule.lstrip("!").rstrip("/")
            parts = rel.split("/")
            hit = any(
                fnmatch.fnmatch("/".join(parts[:k]), pattern) for k in range(1, len(parts) + 1)
            ) or fnmatch.fnmatch(rel, pattern.replace("**/", "*"))
            if hit:
                keep = negate
        if keep:
            sent.append(rel)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return sent


@pytest.mark.wheel
def test_the_docker_build_context_builds_the_wheel(tmp_path: Path) -> None:
    """The Dockerfile's build stage, without the container: `pip wheel` on exactly the files
    the .dockerignore lets through."""
    ctx = tmp_path / "context"
    sent = build_context(ctx)
    assert {"pyproject.toml", "setup.py", "traces/example.parquet"} <= set(sent)
    assert not any(p.startswith("traces/source/") for p in sent)  # only what builds the wheel
    assert not any(p.startswith(("tests/", "docs/", ".git")) for p in sent)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-cache-dir",
            "--no-deps",
            "--wheel-dir",
            tmp_path / "wheels",
            ctx,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("agentx_replay-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert "agentx/data/example.parquet" in names and "agentx/cli/app.py" in names
