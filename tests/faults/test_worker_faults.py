"""One ``--workers`` process SIGKILLed or SIGSTOPped does not lose the run: it ends with the
rows every worker spooled (the lost one's too) as partial results, the lost worker named, a
non-zero exit, and no wait of the parent is unbounded. Real signals to real subprocesses; every
wait polls with a generous bound."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.fault_server import FaultServer

from agentx.replay.workers import SILENT_S, STOP_GRACE_S
from agentx.store.results import read_requests
from agentx.store.rowspool import FLUSH_AFTER_S
from faults.test_signals import (
    children,
    finish,
    leftovers,
    named_pass,
    start,
    start_run,
    trace,
    wait_requests,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals and /proc: Linux")
__all__ = ["trace"]  # the fixture, shared with test_signals
LOST = re.compile(
    r"replay worker (\d) (died \(killed by SIGKILL\)|did not answer[^:;]*|did not stop)"
)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(slow_s=0.2) as srv:
        yield srv


def worker_rows(out: Path) -> dict[int, int]:
    """Rows of requests.parquet per worker (request ids are ``shard.worker.n``)."""
    counts: dict[int, int] = {}
    for r in read_requests(out / "requests.parquet"):
        w = int(r.request_id.split(".")[1])
        counts[w] = counts.get(w, 0) + 1
    return counts


def started(server: FaultServer, proc_pid: int, proc: object) -> list[int]:
    """The two workers' pids, once both run (the theoretical pass, started first, is told
    apart once it has named itself)."""
    named_pass(proc_pid)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while len(workers) != 2:
        workers = children(proc_pid)
        assert time.monotonic() < deadline, "no workers"
        time.sleep(0.05)
    return workers


def test_a_sigkilled_worker_ends_the_run_with_every_spooled_row(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = start_run("replay", trace, server, out, tmp_path, "--concurrency", "2", "--workers", "2")
    workers = started(server, proc.pid, proc)
    wait_requests(server, proc, 6)
    time.sleep(3 * FLUSH_AFTER_S)  # rows answered by now are on disk, whatever the batch
    os.kill(workers[0], signal.SIGKILL)
    err = finish(proc, timeout=90)
    assert proc.returncode == 1, err
    m = LOST.search(err)
    assert m is not None and "died (killed by SIGKILL)" in m.group(0), err
    assert "run failed" in err and "partial" in err, err
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["interrupted"] is True
    rows = worker_rows(out)
    assert rows.get(int(m.group(1)), 0) >= 1, rows  # the killed worker's spooled rows
    assert rows.get(1 - int(m.group(1)), 0) >= 1, rows  # and the survivor's
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["duration", "sigterm"])
def test_a_stopped_worker_does_not_block_the_parent(
    server: FaultServer, trace: Path, tmp_path: Path, how: str
) -> None:
    out = tmp_path / "out"
    flags = ["--concurrency", "2", "--workers", "2"]
    proc = start_run("replay", trace, server, out, tmp_path, *flags)
    if how == "duration":  # start_run's --duration 600 replaced by a short window
        proc.kill()
        proc.communicate()
        args = [str(trace), "--endpoint", server.url, "--duration", "8", "--time-scale", "0"]
        proc = start(["replay", *args, "--no-metrics", "-o", str(out), "--force", *flags], tmp_path)
    workers = started(server, proc.pid, proc)
    wait_requests(server, proc, len(server.requests) + 6)
    time.sleep(3 * FLUSH_AFTER_S)
    t0 = time.monotonic()
    os.kill(workers[0], signal.SIGSTOP)
    try:
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        # bounded: the window (8 s) or the stop, then the silence or the grace, then the writing
        err = finish(proc, timeout=8 + max(SILENT_S, STOP_GRACE_S) + 90)
    finally:
        with_pid = [p for p in workers if Path(f"/proc/{p}").exists()]
        for pid in with_pid:
            os.kill(pid, signal.SIGKILL)
    assert time.monotonic() - t0 < 8 + max(SILENT_S, STOP_GRACE_S) + 90
    assert proc.returncode == (143 if how == "sigterm" else 1), err
    m = LOST.search(err)
    assert m is not None, err
    if how == "duration":  # lost at the window's end, not at the 20 s supervision bound
        assert "after the --duration window ended" in m.group(0), err
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["interrupted"] is True
    rows = worker_rows(out)
    assert rows.get(int(m.group(1)), 0) >= 1, rows  # the stopped worker's spooled rows kept
    assert leftovers(tmp_path) == []
