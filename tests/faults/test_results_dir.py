"""A replay's or a sweep's results directory is claimed before the first request: one that
cannot be written is one line and exit 1 with nothing sent, and a second run into a directory
another run is writing is refused at start (the writer's lock), the first run's results kept."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import orjson
import pytest
from replay.factory import T0, chat_session, write
from replay.fault_server import FaultServer
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.outputs import WRITING_FILE
from faults.test_signals import finish, start_run, wait_requests

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="flock and signals: Linux")


def trace_of(tmp_path: Path) -> Path:
    rows = []
    for i in range(2):
        rows += chat_session(f"s{i}", turns=2, user_text="fault:slow ", start_ns=T0 + i)
    return write(tmp_path / "t.parquet", rows)


def invoke(command: str, trace: Path, server: FaultServer, out: Path) -> tuple[int, str]:
    args = [command, str(trace), "--endpoint", server.url, "--time-scale", "0", "-o", str(out)]
    if command == "sweep":
        args += ["--concurrency", "1"]
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    return res.exit_code, res.stderr


@pytest.mark.parametrize("command", ["replay", "sweep"])
@pytest.mark.parametrize("where", ["under-a-file", "read-only"])
def test_an_unwritable_results_directory_is_refused_before_any_request(
    tmp_path: Path, command: str, where: str
) -> None:
    trace = trace_of(tmp_path)
    if where == "under-a-file":
        (tmp_path / "afile").write_text("a file, not a directory")
        out = tmp_path / "afile" / "r"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        out = ro / "r"
    with FaultServer() as server:
        code, err = invoke(command, trace, server, out)
        assert server.queries == [] and server.requests == []  # not even the probe
    assert code == 1, err
    assert err.startswith(f"agentx: error: cannot write results to {out}"), err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("second", ["replay", "sweep"])
def test_a_second_run_into_a_directory_being_written_is_refused(
    tmp_path: Path, second: str
) -> None:
    trace = trace_of(tmp_path)
    out = tmp_path / "out"
    with FaultServer(slow_s=0.2) as server:
        first = start_run("replay", trace, server, out, tmp_path, "--concurrency", "1")
        wait_requests(server, first, 2)
        assert (out / WRITING_FILE).read_text().strip() == str(first.pid)  # marked in progress
        sent = len(server.requests)
        gets = len(server.queries) - len(server.requests)  # /v1/models and /metrics answered
        code, err = invoke(second, trace, server, out)
        assert code == 1, err
        assert f"{out} is being written by another agentx run (pid {first.pid})" in err, err
        assert err.count("\n") == 1, err
        assert len(server.queries) - len(server.requests) == gets  # the refused run probed nothing
        first.send_signal(signal.SIGTERM)
        finish(first)
        assert first.returncode == 143
        assert len(server.requests) >= sent
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["interrupted"] is True  # the first run's results, whole
    assert not (out / WRITING_FILE).exists()  # released
    with FaultServer() as server:  # a later run into it is fine (with --force)
        res = CliRunner().invoke(
            app,
            [
                "replay",
                str(trace),
                "--endpoint",
                server.url,
                "--time-scale",
                "0",
                "--force",
                "-o",
                str(out),
            ],
        )
    assert res.exit_code == 0, res.output
