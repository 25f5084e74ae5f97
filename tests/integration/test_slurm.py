"""examples/slurm on a real SLURM (a one-node cluster: scripts/slurm_local.sh start): submit.sh
sends the array of shards and the afterok merge through sbatch, the tasks start together at the
--start-at barrier, and the merge job merges them. Runs when SLURM_CONF names a running cluster
(tests/test_example_scale.py runs the same scripts without SLURM everywhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentx.serve_sim import SimConfig
from agentx.serve_sim.process import SimProcess

SLURM = Path(__file__).parents[2] / "examples" / "slurm"


def _cluster() -> str | None:
    conf = os.environ.get("SLURM_CONF")
    if not conf or not shutil.which("sbatch") or not shutil.which("sinfo"):
        return None
    res = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
    return conf if res.returncode == 0 and "idle" in res.stdout.split() else None


pytestmark = pytest.mark.skipif(
    _cluster() is None,
    reason="no SLURM cluster (SLURM_CONF unset or its node not idle); to run: "
    "bash scripts/slurm_local.sh start && export SLURM_CONF=/tmp/agentx-slurm/slurm.conf",
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess(SimConfig.of(port=0, fast=True)) as server:
        yield server


def test_submit_runs_the_array_then_the_merge(sim: SimProcess, tmp_path: Path) -> None:
    results = tmp_path / "run"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AGENTX_ENDPOINT": sim.url,
        "AGENTX_RESULTS": str(results),
        "AGENTX_START_DELAY": "8",
        "AGENTX_REPLAY_ARGS": "--time-scale 0 --concurrency 2 --warmup 1",
    }
    submitted = time.time()
    res = subprocess.run(
        ["bash", str(SLURM / "submit.sh"), "3"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    merged = results / "merged" / "summary.json"
    deadline = time.monotonic() + 180
    while not merged.is_file() and time.monotonic() < deadline:
        time.sleep(1)
    logs = "\n".join(p.read_text() for p in sorted(tmp_path.glob("agentx-*.out")))
    assert merged.is_file(), logs
    m = json.loads(merged.read_text())
    assert [s["shard"] for s in m["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert m["requests"]["total"] + m["requests"]["warmup"] == 48  # the bundled example
    barrier = int(submitted) + 8  # submit.sh: whole seconds from its own clock read
    for i in range(3):
        shard = json.loads((results / f"shard-{i}" / "summary.json").read_text())
        start = shard["clock"]["wall_ns"] / 1e9
        assert start >= barrier
        late = [w for w in shard.get("warnings", ()) if "--start-at" in w]
        assert late or start - barrier < 3.0, logs  # together, unless a task came in late
