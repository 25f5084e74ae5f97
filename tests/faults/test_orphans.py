"""A SIGKILLed agentx leaves nothing running: the ``--workers`` of a replay stop loading the
server, and the agent ``capture -- CMD`` started stops (``PR_SET_PDEATHSIG``). Real signals to
real subprocesses; every wait polls with a generous bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from replay.fault_server import FaultServer
from upstream import Upstream

from faults.test_capture_kill import free_port
from faults.test_signals import alive, children, named_pass, start_run, trace, wait_requests

AGENTX = [sys.executable, "-m", "agentx"]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG: Linux")
__all__ = ["trace"]  # the fixture, shared with test_signals


def gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(slow_s=0.2) as srv:
        yield srv


def test_workers_stop_when_their_parent_is_sigkilled(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    proc = start_run(
        "replay", trace, server, tmp_path / "out", tmp_path, "--concurrency", "2", "--workers", "2"
    )
    workers: list[int] = []
    try:
        wait_requests(server, proc, 4)
        theory = named_pass(proc.pid)  # the theoretical pass beside the lanes goes too
        workers = children(proc.pid)
        assert len(workers) == 2, workers
        workers += theory
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert gone(workers, 30), [p for p in workers if alive(p)]  # they ran 600 s before
        sent = len(server.requests)
        time.sleep(1.0)
        assert len(server.requests) <= sent + 2  # nothing more after those in flight
    finally:
        for pid in {*children(proc.pid), *(p for p in workers if alive(p))}:
            os.kill(pid, signal.SIGKILL)


def test_the_captured_agent_stops_when_capture_is_sigkilled(tmp_path: Path) -> None:
    up = Upstream().start()
    pidfile = tmp_path / "agent.pid"
    agent = f"echo $$ > {pidfile}; exec sleep 600"
    proc = subprocess.Popen(
        [
            *AGENTX,
            "capture",
            "--upstream",
            up.url,
            "--port",
            str(free_port()),
            "-o",
            str(tmp_path / "c.parquet"),
            "--confdir",
            str(tmp_path / "conf"),
            "--no-status",
            "--",
            "sh",
            "-c",
            agent,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid = None
    try:
        deadline = time.monotonic() + 60
        while not pidfile.is_file() or not pidfile.read_text().strip():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent did not start"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        assert alive(pid)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert gone([pid], 30), "the agent outlived its capture"
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        up.stop()
