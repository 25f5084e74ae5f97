"""Crash safety: a writer killed with SIGKILL loses at most the exchange in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx import __version__
from agentx.cli import app
from agentx.core.errors import TraceError
from agentx.store import TraceWriter, open_trace, read_trace, recover, spool_path

from .crash_child import make_exchange

CHILD = Path(__file__).with_name("crash_child.py")


def _kill_after(path: Path, acks: int) -> int:
    """Run the child writer, SIGKILL it once ``acks`` appends were acknowledged; return the
    number acknowledged (the pipe may hold more than we waited for)."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen = -1
    try:
        for line in proc.stdout:
            seen = int(line)
            if seen + 1 == acks:
                # a live writer: readers and other writers are turned away, nothing is compacted
                with pytest.raises(TraceError, match="still being written"):
                    open_trace(path)
                with pytest.raises(TraceError, match="being written by another writer"):
                    TraceWriter(path)
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rest = proc.stdout.read()
        proc.stdout.close()
    acked = seen + 1 + len(rest.split())
    assert proc.returncode == -signal.SIGKILL
    return acked


def _same(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)


@pytest.mark.parametrize("acks", [1, 17])
def test_sigkilled_writer_is_recovered_on_next_open(tmp_path: Path, acks: int) -> None:
    path = tmp_path / "t.parquet"
    acked = _kill_after(path, acks)
    assert spool_path(path).exists() and not path.exists()

    got = read_trace(path)  # recovers automatically

    assert acked <= len(got) <= acked + 1  # every acknowledged exchange; at most one more
    for i, ex in enumerate(got):
        want = make_exchange(i)
        assert ex.request_id == want.request_id
        assert _same(ex.request, want.request)
        assert ex.usage == want.usage and ex.trace_id == "crash"
    assert path.exists() and not spool_path(path).exists()
    info = open_trace(path)
    assert info.num_rows == len(got) and info.version == __version__  # the stamp survives


def test_stale_spool_blocks_a_new_writer_until_recovered(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    acked = _kill_after(path, 3)
    with pytest.raises(TraceError, match="agentx recover"):
        TraceWriter(path)
    n = recover(path)
    assert n is not None and n >= acked
    assert recover(path) is None  # nothing left to do
    with TraceWriter(path) as w:
        w.append(make_exchange(0))
    assert len(read_trace(path)) == 1


def _dead_writer_spool(path: Path, n: int) -> bytes:
    """A spool as a writer leaves it when it dies after ``n`` appends (lock released)."""
    w = TraceWriter(path)
    for i in range(n):
        w.append(make_exchange(i))
    w._spool.close()  # what the kernel does to a killed process's files
    return spool_path(path).read_bytes()


def test_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    data = _dead_writer_spool(path, 4)
    lines = data.splitlines(keepends=True)
    torn = b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]  # the 4th append half-written
    spool_path(path).write_bytes(torn)
    got = read_trace(path)
    assert [ex.request_id for ex in got] == ["r0", "r1", "r2"]


def test_garbage_spool_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    spool_path(path).write_bytes(b"this is not a spool\n")
    with pytest.raises(TraceError, match="not an agentx spool"):
        open_trace(path)


def test_recover_command(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _dead_writer_spool(path, 2)
    runner = CliRunner()
    res = runner.invoke(app, ["recover", str(path)])
    assert res.exit_code == 0, res.output
    assert "recovered 2 exchanges" in res.stdout
    assert len(read_trace(path)) == 2
    res = runner.invoke(app, ["recover", str(path)])
    assert res.exit_code == 0 and "nothing to recover" in res.stdout
    res = runner.invoke(app, ["recover", str(tmp_path / "missing.parquet")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_fsync_mode_writes_the_same_trace(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    with TraceWriter(path, fsync=True) as w:
        w.append(make_exchange(0))
    assert os.path.getsize(path) > 0 and len(read_trace(path)) == 1


def test_amendments_add_flags_at_compaction_and_at_recovery(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    with TraceWriter(path) as w:
        w.append(make_exchange(0))
        w.append(make_exchange(1))
        w.amend("r0", ("side_call",))
        w.amend("r0", ("side_call", "retry"))
    assert [ex.flags for ex in read_trace(path)] == [("side_call", "retry"), ()]
    dead = tmp_path / "dead.parquet"
    w = TraceWriter(dead)
    w.append(make_exchange(0))
    w.amend("r0", ("side_call",))
    w._spool.close()  # killed: the amendment is in the spool, and recovery applies it
    assert [ex.flags for ex in read_trace(dead)] == [("side_call",)]
