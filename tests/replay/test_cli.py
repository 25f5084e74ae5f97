"""`agentx replay` on the command line: output, exit codes, the API key never shown."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app

from .factory import T0, chat_session, write
from .fault_server import FaultServer

SECRET = "sk-test-DO-NOT-PRINT-1234"


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    rows = chat_session("a", turns=2) + chat_session("b", turns=2, start_ns=T0 + 1)
    return write(tmp_path / "t.parquet", rows)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_summary_and_results_dir(server: FaultServer, trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    code, stdout, stderr = run(
        str(trace), "--endpoint", server.url, "--json", "-o", str(out), "--time-scale", "0",
        "--concurrency", "2", "--api-key", SECRET, "--no-metrics",
    )  # fmt: skip
    assert code == 0, stderr
    summary = orjson.loads(stdout)
    assert summary["schema"] == "agentx.summary/1"
    assert summary["requests"]["total"] == 4 and summary["slo"]["passed"] is None
    for key in ("endpoint", "model", "started_at", "duration_s", "sessions", "tokens", "throughput",
                "latency_ms", "per_user_output_tokens_per_s", "cache", "schedule", "client"):  # fmt: skip
        assert key in summary
    assert {p.name for p in out.iterdir()} >= {"requests.parquet", "summary.json"}
    assert server.auth[-1] == f"Bearer {SECRET}"  # sent to the server...
    for blob in (stdout, stderr, *(p.read_bytes().decode("latin-1") for p in out.iterdir())):
        assert SECRET not in blob  # ...and nowhere else


def test_unmet_slo_exits_3(server: FaultServer, trace: Path, tmp_path: Path) -> None:
    code, stdout, _ = run(
        str(trace), "--endpoint", server.url, "--json", "-o", str(tmp_path / "r"), "--time-scale", "0",
        "--slo", "ttft_p99<=0.001us", "--no-metrics",
    )  # fmt: skip
    assert code == 3
    assert orjson.loads(stdout)["slo"]["passed"] is False


def test_unreachable_endpoint_is_one_line_exit_1(trace: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, stdout, stderr = run(
        str(trace), "--endpoint", f"http://127.0.0.1:{port}", "-o", str(tmp_path / "r")
    )
    assert code == 1 and stdout == ""
    assert stderr.strip().count("\n") == 0 and stderr.startswith("agentx: error: cannot reach")


@pytest.mark.parametrize(
    "bad",
    [
        ["--shard", "3/2"],
        ["--assistant", "maybe"],
        ["--extra-body", "[1]"],
        ["--slo", "ttft_p99<=fast"],
    ],
)
def test_usage_errors_exit_2(trace: Path, bad: list[str]) -> None:
    code, _, stderr = run(str(trace), "--endpoint", "http://127.0.0.1:9", *bad)
    assert code == 2, stderr
    assert "agentx: error:" in stderr


def test_missing_trace_exits_1(tmp_path: Path) -> None:
    code, _, stderr = run(str(tmp_path / "nope.parquet"), "--endpoint", "http://127.0.0.1:9")
    assert code == 1 and "nope.parquet" in stderr
