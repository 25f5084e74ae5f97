"""SIGTERM (Kubernetes, SLURM, ``timeout``) stops a replay or a sweep like
Ctrl-C: partial results written, exit 143; ``--workers`` processes stop with their parent; no
temporary file is left behind. Real signals to real ``agentx`` subprocesses.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.factory import T0, chat_session, write
from replay.fault_server import FaultServer

from agentx.replay.theory import PASS_PROCESS_NAME
from agentx.replay.workers import WORKER_PROCESS_NAME
from agentx.store.results import read_requests

AGENTX = [sys.executable, "-m", "agentx"]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals and /proc: Linux")


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(slow_s=0.2) as srv:
        yield srv


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    rows = []
    for i in range(4):
        rows += chat_session(f"s{i}", turns=3, user_text="fault:slow ", start_ns=T0 + i)
    return write(tmp_path / "t.parquet", rows)


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    tmpdir = tmp_path / "tmpdir"  # the run's TMPDIR: what it leaves there is checked
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*AGENTX, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def start_run(
    command: str, trace: Path, server: FaultServer, out: Path, tmp_path: Path, *flags: str
) -> subprocess.Popen[str]:
    """``agentx COMMAND TRACE`` against the fault server, long enough to be stopped (a 600 s
    window, no think time, no metrics scrapes), with ``flags`` added."""
    args = [command, str(trace), "--endpoint", server.url, "--duration", "600"]
    args += ["--time-scale", "0", "--no-metrics", "-o", str(out), *flags]
    return start(args, tmp_path)


def wait_requests(server: FaultServer, proc: subprocess.Popen[str], n: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the replay did not start sending"
        time.sleep(0.05)


def children(pid: int, *, workers: bool = True) -> list[int]:
    """Worker processes of ``pid`` (multiprocessing's spawn children), or with
    ``workers=False`` its theoretical pass (a :class:`agentx.replay.spawned.Spawned` child),
    each named by itself first thing (a worker before any request is sent)."""
    name = WORKER_PROCESS_NAME if workers else PASS_PROCESS_NAME
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        comm = stat.split("(", 1)[1].rsplit(")", 1)[0]
        started = b"spawn_main" if workers else b"agentx.replay.spawned"
        if ppid == pid and started in cmdline and comm == name:
            out.append(int(entry.name))
    return out


def named_pass(pid: int) -> list[int]:
    """The theoretical pass of ``pid``, once it has named itself (it does so first thing)."""
    deadline = time.monotonic() + 30
    while not (found := children(pid, workers=False)):
        assert time.monotonic() < deadline, "no theoretical pass beside the lanes"
        time.sleep(0.05)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def finish(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    kids = children(proc.pid)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid, *kids]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert "Traceback" not in err and "leaked semaphore" not in err, err
    return err


def leftovers(tmp_path: Path) -> list[str]:
    """agentx's files in the run's TMPDIR (tiktoken keeps its own cache there)."""
    return [p.name for p in (tmp_path / "tmpdir").iterdir() if p.name != "data-gym-cache"]


def check_partial(out: Path, tmp_path: Path) -> dict[str, object]:
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["interrupted"] is True
    assert summary["requests"]["total"] >= 1
    assert (out / "requests.parquet").is_file() and (out / "report.html").is_file()
    assert leftovers(tmp_path) == []  # the spools of sent bodies and of rows are gone
    return summary  # type: ignore[no-any-return]


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_writes_partial_results_and_exits_143(
    server: FaultServer, trace: Path, tmp_path: Path, workers: int
) -> None:
    out = tmp_path / "out"
    proc = start_run(
        "replay", trace, server, out, tmp_path, "--concurrency", "2", "--workers", str(workers)
    )
    wait_requests(server, proc, 4)
    theory = named_pass(proc.pid)  # the theoretical pass beside the lanes
    kids = children(proc.pid)
    assert len(kids) == (workers if workers > 1 else 0) and len(theory) == 1
    kids += theory
    proc.send_signal(signal.SIGTERM)
    err = finish(proc)
    assert proc.returncode == 143, err
    check_partial(out, tmp_path)
    assert not any(alive(k) for k in kids)  # the workers stopped with their parent


def test_sigint_to_the_parent_alone_stops_the_workers(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    """``kill -INT <parent>`` (no terminal to deliver it to the workers too)."""
    out = tmp_path / "out"
    proc = start_run("replay", trace, server, out, tmp_path, "--concurrency", "2", "--workers", "2")
    wait_requests(server, proc, 4)
    theory = named_pass(proc.pid)
    kids = children(proc.pid)
    assert len(kids) == 2 and len(theory) == 1
    kids += theory
    proc.send_signal(signal.SIGINT)
    err = finish(proc)
    assert proc.returncode == 130, err
    check_partial(out, tmp_path)
    assert not any(alive(k) for k in kids)


def test_sigterm_before_the_run_cleans_up(tmp_path: Path) -> None:
    """A signal while the endpoint is still being probed: exit 143, nothing left in TMPDIR."""
    import socket

    listener = socket.socket()  # accepts, never answers: the probe waits
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        proc = start(
            [
                "replay",
                "example",
                "--endpoint",
                f"http://127.0.0.1:{port}",
                "-o",
                str(tmp_path / "out"),
            ],
            tmp_path,
        )
        conn, _ = listener.accept()  # the probe connected
        proc.send_signal(signal.SIGTERM)
        err = finish(proc)
        conn.close()
    finally:
        listener.close()
    assert proc.returncode == 143 and err.strip().splitlines()[-1].startswith("agentx:"), err
    assert leftovers(tmp_path) == []


def test_sigterm_during_a_sweep_keeps_the_levels_measured(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    proc = start_run("sweep", trace, server, out, tmp_path, "--concurrency", "1,2")
    wait_requests(server, proc, 3)
    proc.send_signal(signal.SIGTERM)
    err = finish(proc)
    assert proc.returncode == 143, err
    check_partial(out / "c1", tmp_path)
    sweep = orjson.loads((out / "sweep.json").read_bytes())
    assert [p["concurrency"] for p in sweep["points"]] == [1]  # level 2 never started


@pytest.fixture
def long_trace(tmp_path: Path) -> Path:
    """Sessions long enough for a warm-up of several requests per lane and a measured window."""
    rows = []
    for i in range(4):
        rows += chat_session(f"s{i}", turns=20, user_text="fault:slow ", start_ns=T0 + i)
    return write(tmp_path / "long.parquet", rows)


def warmup_sent(server: FaultServer) -> list[bool]:
    """Per request received: a warm-up request (they ask for one token; measured ones for 4)."""
    return [body.get("max_tokens") == 1 for body in server.requests]


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_during_the_warmup_writes_partial_results(
    server: FaultServer, long_trace: Path, tmp_path: Path, workers: int
) -> None:
    """Stopped before the measured window started: the warm-up rows are written, exit 143."""
    out = tmp_path / "out"
    flags = f"--concurrency 2 --warmup 15 --workers {workers}".split()
    proc = start_run("replay", long_trace, server, out, tmp_path, *flags)
    wait_requests(server, proc, 3)
    kids = children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    err = finish(proc)
    assert proc.returncode == 143, err
    assert all(warmup_sent(server)), "the signal came after the warm-up: make it longer"
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["interrupted"] is True
    assert summary["schedule"]["warmup_s"] is None  # the measured window never started
    rows = read_requests(out / "requests.parquet")
    assert rows and all(r.warmup for r in rows)
    assert (out / "report.html").is_file() and leftovers(tmp_path) == []
    assert not any(alive(k) for k in kids)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_after_the_warmup_keeps_both_kinds_of_rows(
    server: FaultServer, long_trace: Path, tmp_path: Path, workers: int
) -> None:
    """Stopped in the measured window that followed a warm-up (the workers met at its start)."""
    out = tmp_path / "out"
    flags = f"--concurrency 2 --warmup 2 --workers {workers}".split()
    proc = start_run("replay", long_trace, server, out, tmp_path, *flags)
    deadline = time.monotonic() + 60
    while warmup_sent(server).count(False) < 2:  # measured requests are being sent
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the measured window did not start"
        time.sleep(0.05)
    kids = children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    err = finish(proc)
    assert proc.returncode == 143, err
    summary = check_partial(out, tmp_path)
    assert summary["schedule"]["warmup_s"] is not None
    rows = read_requests(out / "requests.parquet")
    assert any(r.warmup for r in rows) and any(not r.warmup for r in rows)
    assert not any(alive(k) for k in kids)
