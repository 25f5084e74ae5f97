"""A SIGKILLed replay (the OOM killer, a preempted pod) leaves something usable: its spool in
its results directory (``DIR/.agentx-run``: the set-up, never a credential, and the rows that
finished, on disk within about a second), which ``agentx recover DIR`` turns into a results
directory that ``report`` and ``merge`` read like any other, marked partial. A live run's is
refused. Real ``agentx`` subprocesses, real SIGKILL; every wait polls with a generous bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from replay.fault_server import FaultServer

from agentx.core.outputs import RUN_SPOOL, WRITING_FILE
from agentx.formats.fingerprint import trace_fingerprint
from agentx.replay.recover import KILLED
from agentx.replay.rundir import RUN_START_FILE
from agentx.store.rowspool import FLUSH_AFTER_S, spooled_batches
from faults.test_signals import (
    AGENTX,
    alive,
    children,
    finish,
    leftovers,
    server,
    start,
    start_run,
    trace,
    wait_requests,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals and /proc: Linux")
__all__ = ["server", "trace"]  # the fixtures, shared with test_signals
KEY = "sk-recover-test-0123456789abcdef"


def agentx(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmpdir")}
    return subprocess.run(
        [*AGENTX, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def killed_run(
    server: FaultServer, trace: Path, tmp_path: Path, out: Path, *flags: str
) -> list[int]:
    """A replay into ``out`` SIGKILLed once it finished a few requests; its workers' pids."""
    proc = start_run("replay", trace, server, out, tmp_path, "--api-key", KEY, *flags)
    wait_requests(server, proc, 6)
    time.sleep(3 * FLUSH_AFTER_S)  # fewer rows than a batch, yet on disk by now
    workers = children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 30
    while any(alive(w) for w in workers):  # they die with their parent
        assert time.monotonic() < deadline, "workers outlived their parent"
        time.sleep(0.05)
    return workers


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sigkilled_replay_recovers_to_a_results_directory(
    server: FaultServer, trace: Path, tmp_path: Path, workers: int
) -> None:
    out = tmp_path / "out"
    killed_run(server, trace, tmp_path, out, "--concurrency", "2", "--workers", str(workers))
    spool = out / RUN_SPOOL
    rows = sum(b.num_rows for p in spool.glob("rows-*.arrows") for b in spooled_batches(p))
    assert rows >= 1  # within about a second, whatever the batch
    start = orjson.loads((spool / RUN_START_FILE).read_bytes())
    # the fingerprint is hashed beside the lanes: the kill may come before it is known
    assert start["endpoint"] == server.url
    assert start["trace_fingerprint"] in (None, trace_fingerprint(trace))
    assert KEY not in str(start) and "authorization" not in str(start).lower()

    done = agentx(tmp_path, "recover", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "recovered" in done.stdout
    assert not spool.exists() and not (out / WRITING_FILE).exists()
    assert leftovers(tmp_path) == []  # the dead run's sent bodies (prompt text) went too
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["requests"]["total"] >= rows
    assert summary["config"]["interrupted"] is True  # partial, as a stopped run is
    assert summary["gates"]["passed"] is False and summary["gates"]["reasons"] == [KILLED]
    assert summary["cache"]["theoretical_hit_rate"] is not None  # the sent bodies were there
    assert summary["client"]["cpu_percent"] is None  # unknown, never 0
    assert summary["trace_fingerprint"] == trace_fingerprint(trace)  # known, or hashed now
    for name in ("requests.parquet", "theory.parquet", "report.html"):
        assert (out / name).is_file(), name
    for p in out.iterdir():
        assert KEY.encode() not in p.read_bytes(), p

    report = agentx(tmp_path, "report", str(out))
    assert report.returncode == 0, report.stderr
    merged = agentx(tmp_path, "merge", str(out), "-o", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    assert (
        orjson.loads((tmp_path / "merged" / "summary.json").read_bytes())["requests"]
        == (summary["requests"])
    )


def test_recovering_a_live_run_is_refused(server: FaultServer, trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = start_run("replay", trace, server, out, tmp_path, "--concurrency", "2")
    try:
        wait_requests(server, proc, 4)
        refused = agentx(tmp_path, "recover", str(out))
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip()
        assert "\n" not in line and f"live agentx run (pid {proc.pid})" in line, line
        assert (out / RUN_SPOOL).is_dir()  # untouched
    finally:
        proc.send_signal(signal.SIGTERM)
    err = finish(proc, timeout=90)
    assert proc.returncode == 143, err
    assert (out / "summary.json").is_file() and not (out / RUN_SPOOL).exists()


def test_the_next_replay_names_the_dead_runs_temporary_directory_and_refuses_its_results_dir(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    killed_run(server, trace, tmp_path, out, "--concurrency", "2")
    (left,) = leftovers(tmp_path)
    size_mb = sum(f.stat().st_size for f in (tmp_path / "tmpdir" / left).iterdir()) / 1e6
    args = [str(trace), "--endpoint", server.url, "--max-requests", "2", "--time-scale", "0"]
    into = start(["replay", *args, "--no-metrics", "-o", str(out)], tmp_path)
    err = finish(into, timeout=90)
    assert into.returncode == 2, err  # the killed run's rows are not replaced unasked
    assert f"agentx recover {out}" in err and "--force" in err, err
    assert (out / RUN_SPOOL).is_dir()
    nxt = start(["replay", *args, "--no-metrics", "-o", str(tmp_path / "out2")], tmp_path)
    err = finish(nxt, timeout=90)
    assert nxt.returncode == 0, err
    assert "removed 1 temporary directory of replays that died" in err, err
    assert f"({size_mb:.1f} MB, prompt text)" in err and left in err, err  # which, how big
    assert leftovers(tmp_path) == []
    done = agentx(tmp_path, "recover", str(out))  # the rows remain; the bodies sent are gone
    assert done.returncode == 0, done.stderr
    assert "the bodies the run sent" in done.stderr, done.stderr
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["cache"]["theoretical_hit_rate"] is None
