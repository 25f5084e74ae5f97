"""Processes an agent leaves running when it exits (cline's hub daemon): named at the end of the
capture, and ended with ``--end-leftovers``."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from agentx.capture.runner import CaptureConfig, run_capture
from agentx.capture.runner.leftovers import become_subreaper, stop_subreaping

# An agent that starts a daemon the way cline does (forked away, in a session of its own,
# outliving its parent), writes the daemon's pid and exits.
AGENT = """
import os, sys, time
pid_file = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pid_file + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(pid_file + ".tmp", pid_file)
        time.sleep(120)
    os._exit(0)
for _ in range(200):
    if os.path.exists(pid_file):
        break
    time.sleep(0.02)
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] != b"Z"


def _capture(tmp_path: Path, confdir: Path, *, end_leftovers: bool) -> tuple[int, str, int]:
    out = io.StringIO()
    pid_file = tmp_path / "daemon.pid"
    result = run_capture(
        CaptureConfig(
            out=tmp_path / f"t{int(end_leftovers)}.parquet",
            port=0,
            confdir=confdir,
            command=(sys.executable, "-c", AGENT, str(pid_file)),
            status=False,
            end_leftovers=end_leftovers,
        ),
        console=Console(file=out, width=400, highlight=False),
    )
    return int(pid_file.read_text()), out.getvalue(), result.exit_code


def test_a_daemon_the_agent_left_is_named_and_ended_with_the_flag(
    tmp_path: Path, confdir: Path
) -> None:
    if not become_subreaper():
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) unavailable")
    stop_subreaping()
    daemon, said, rc = _capture(tmp_path, confdir, end_leftovers=False)
    try:
        assert rc == 0 and _alive(daemon)
        assert f"the agent left 1 process running: {daemon} " in said
        assert "--end-leftovers" in said
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(daemon, 0)  # re-parented to this process while it was the subreaper

    (tmp_path / "daemon.pid").unlink()
    daemon, said, rc = _capture(tmp_path, confdir, end_leftovers=True)
    assert rc == 0
    assert f"ended 1 process the agent left running: {daemon} " in said
    for _ in range(100):
        if not _alive(daemon):
            break
        time.sleep(0.02)
    assert not _alive(daemon)


def test_an_agent_that_leaves_nothing_is_not_reported(tmp_path: Path, confdir: Path) -> None:
    out = io.StringIO()
    result = run_capture(
        CaptureConfig(
            out=tmp_path / "t.parquet",
            port=0,
            confdir=confdir,
            command=(sys.executable, "-c", "pass"),
            status=False,
        ),
        console=Console(file=out, width=400, highlight=False),
    )
    assert result.exit_code == 0 and "left" not in out.getvalue()
