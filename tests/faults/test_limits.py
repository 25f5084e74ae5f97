"""Bounded lanes, no proxy loops, exposure warnings, CA file permissions.

(The linear SSE parsing is in test_hostile_server.py, leftover files in test_outputs.py.)
"""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest
from replay.fault_server import FaultServer

from agentx.apis import Api
from agentx.capture.runner import Capture, CaptureConfig
from agentx.capture.runner.agent import agent_env
from agentx.capture.runner.config import exposure_warning
from agentx.store import read_trace

AGENTX = [sys.executable, "-m", "agentx"]


def test_a_billion_lanes_for_two_requests_is_two_lanes(tmp_path: Path) -> None:
    """``--concurrency 1000000000 --max-requests 2`` allocated ~650 MB/s until killed; under a
    3 GiB address-space limit (a guard for this machine) it must simply run."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    out = tmp_path / "out"
    with FaultServer() as server:
        proc = subprocess.run(
            [
                *AGENTX,
                "replay",
                "example",
                "--endpoint",
                server.url,
                "--concurrency",
                "1000000000",
                "--max-requests",
                "2",
                "--time-scale",
                "0",
                "--no-metrics",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limit,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["requests"]["total"] == 2
    assert summary["config"]["lanes"] == 2 and summary["config"]["concurrency"] == 1_000_000_000


def test_more_lanes_than_any_run_needs_is_refused_up_front() -> None:
    from typer.testing import CliRunner

    from agentx.cli import app

    res = CliRunner().invoke(
        app,
        [
            "replay",
            "example",
            "--endpoint",
            "http://127.0.0.1:9",
            "--concurrency",
            "10000000",
            "--duration",
            "10",
        ],
    )
    assert res.exit_code == 2 and "--shard" in res.stderr and res.stderr.count("\n") == 1


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_request_addressed_to_the_proxy_itself_is_refused(tmp_path: Path, mode: str) -> None:
    """Forward mode, addressed to itself: 950 rows in 3 s, looping through itself."""
    port = _free_port()
    cfg = CaptureConfig(
        out=tmp_path / "t.parquet",
        mode=mode,  # type: ignore[arg-type]
        upstream=f"http://127.0.0.1:{port}" if mode == "reverse" else None,
        port=port,
        confdir=tmp_path / "conf",
        status=False,
    )
    with Capture(cfg, report=lambda _msg: None) as cap:
        proxy = cap.url if mode == "forward" else None
        with httpx.Client(proxy=proxy, timeout=10, trust_env=False) as client:
            r = client.post(f"http://127.0.0.1:{port}/v1/messages", json={"model": "m"})
    assert r.status_code == 508 and b"capture proxy itself" in r.content
    rows = read_trace(cfg.out)
    assert len(rows) <= 1 and all(row.api == Api.OTHER or row.status == 508 for row in rows)


def test_a_non_loopback_bind_is_warned_about() -> None:
    for host in ("0.0.0.0", "::", "192.0.2.7"):
        for mode in ("forward", "reverse"):
            cfg = CaptureConfig(out=Path("t"), listen_host=host, mode=mode)  # type: ignore[arg-type]
            warning = exposure_warning(cfg, 8780)
            assert warning is not None and "anyone who can reach" in warning
            assert ("any host" in warning) is (mode == "forward")
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert exposure_warning(CaptureConfig(out=Path("t"), listen_host=host), 8780) is None


def test_ca_files_are_not_writable_by_others_under_umask_000(tmp_path: Path) -> None:
    """A forward-mode capture (it makes the CA) and the CA bundle its agent gets, umask 000."""
    confdir = tmp_path / "conf"
    cfg = CaptureConfig(out=tmp_path / "t.parquet", mode="forward", port=0, confdir=confdir)
    umask = os.umask(0)
    try:
        with Capture(cfg, report=lambda _msg: None) as cap:
            agent_env(cfg, cap.url, cap.confdir)  # writes agentx-ca-bundle.pem
    finally:
        os.umask(umask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in confdir.iterdir()}
    assert "mitmproxy-ca-cert.pem" in modes and "agentx-ca-bundle.pem" in modes
    for name, mode in modes.items():
        assert not mode & 0o022, f"{name} is {oct(mode)}"  # group/other cannot write
    assert modes["mitmproxy-ca.pem"] & 0o077 == 0  # the private key: owner only


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
