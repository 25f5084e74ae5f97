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
        str(trace),
        "--endpoint",
        server.url,
        "--json",
        "-o",
        str(out),
        "--time-scale",
        "0",
        "--concurrency",
        "2",
        "--api-key",
        SECRET,
        "--no-metrics",
    )
    assert code == 0, stderr
    summary = orjson.loads(stdout)
    assert summary["schema"] == "agentx.summary/1"
    assert summary["requests"]["total"] == 4 and summary["slo"]["passed"] is None
    for key in (
        "endpoint",
        "model",
        "started_at",
        "duration_s",
        "sessions",
        "tokens",
        "throughput",
        "latency_ms",
        "per_user_output_tokens_per_s",
        "cache",
        "schedule",
        "client",
    ):
        assert key in summary
    assert {p.name for p in out.iterdir()} >= {"requests.parquet", "summary.json"}
    assert server.auth[-1] == f"Bearer {SECRET}"  # sent to the server...
    for blob in (stdout, stderr, *(p.read_bytes().decode("latin-1") for p in out.iterdir())):
        assert SECRET not in blob  # ...and nowhere else


def test_unmet_slo_exits_3(server: FaultServer, trace: Path, tmp_path: Path) -> None:
    code, stdout, _ = run(
        str(trace),
        "--endpoint",
        server.url,
        "--json",
        "-o",
        str(tmp_path / "r"),
        "--time-scale",
        "0",
        "--slo",
        "ttft_p99<=0.001us",
        "--no-metrics",
    )
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


def test_config_file_cost_percentiles_and_reset_warning(
    server: FaultServer, trace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "agentx.toml"
    config.write_text(
        "[replay]\n"
        'time-scale = 0\nconcurrency = 2\nno_metrics = true\npercentiles = "95,99.9"\n'
        "[cost]\n"
        "gpu-hour-cost = 2.0\ngpus = 8\nlicense_fraction = 0.3\n"
        "price = {input = 3, cached = 0.3, output = 15}\n"
        "[report]\n"  # other commands' sections are allowed and ignored
        'percentiles = "90"\n'
    )
    out = tmp_path / "res"
    code, stdout, stderr = run(
        str(trace),
        "--endpoint",
        server.url,
        "--json",
        "-o",
        str(out),
        "--config",
        str(config),
        "--gpus",
        "4",
        "--reset-cache",
    )
    assert code == 0, stderr
    s = orjson.loads(stdout)
    assert s["config"]["concurrency"] == 2 and s["config"]["time_scale"] == 0
    assert s["config"]["scrape_metrics"] is False
    assert list(s["latency_ms"]["ttft"]) == ["p50", "p90", "p95", "p99", "p99.9", "mean", "max"]
    cost = s["cost"]
    assert cost["gpus"] == 4 and cost["usd_per_hour"] == 8.0  # the command line wins
    assert cost["price_usd_per_million_tokens"]["cached"] == 0.3
    out_tps = s["throughput"]["output_tokens_per_s"]
    assert cost["usd_per_million_output_tokens"] == pytest.approx(8.0 / (out_tps * 3600) * 1e6)
    # the fault server has no cache-reset endpoint: a warning, in the summary and on stderr
    assert any("could not reset the server's prefix cache" in w for w in s["warnings"])
    assert "could not reset" in stderr and s["config"]["cache_reset"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[replay]\nnot-an-option = 1\n", "not-an-option: not an option of agentx replay"),
        ("[cost]\ntime-scale = 0\n", "[cost] time-scale"),
        ("[nope]\n", "unknown section [nope]"),
        ("[replay\n", "not valid TOML"),
    ],
)
def test_bad_config_files_are_usage_errors(
    trace: Path, tmp_path: Path, text: str, message: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    code, _, stderr = run(str(trace), "--endpoint", "http://127.0.0.1:9", "--config", str(config))
    flat = " ".join(stderr.replace("│", " ").split())  # typer boxes and wraps usage errors
    assert code == 2 and message in flat, stderr


def test_open_loop_and_workers_auto_flags(server: FaultServer, trace: Path, tmp_path: Path) -> None:
    code, stdout, stderr = run(
        str(trace),
        "--endpoint",
        server.url,
        "--json",
        "-o",
        str(tmp_path / "res"),
        "--session-rate",
        "20",
        "--arrival",
        "gamma",
        "--burstiness",
        "2",
        "--workers",
        "auto",
        "--no-metrics",
    )
    assert code == 0, stderr
    s = orjson.loads(stdout)
    assert s["schedule"]["offered_session_rate"] == 20.0
    assert s["schedule"]["arrivals_started"] == 2 and s["requests"]["total"] == 4
    assert s["config"]["concurrency"] == 1000  # the open-loop cap when none is given
    assert s["config"]["arrival"] == "gamma" and s["config"]["burstiness"] == 2.0
    assert "--workers auto:" in stderr and s["config"]["workers_auto"]["workers"] >= 1


@pytest.mark.parametrize(
    "bad",
    [["--workers", "many"], ["--workers", "0"], ["--arrival", "gamma"], ["--request-rate", "0"]],
)
def test_open_loop_usage_errors_exit_2(trace: Path, bad: list[str]) -> None:
    code, _, stderr = run(str(trace), "--endpoint", "http://127.0.0.1:9", *bad)
    assert code == 2, stderr
    assert "agentx: error:" in stderr and len(stderr.strip().splitlines()) == 1


def test_each_warning_is_printed_once(
    server: FaultServer, trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentx.replay import bottleneck

    monkeypatch.setattr(bottleneck, "SATURATED_CPU_PERCENT", -1.0)  # any CPU use: a warning
    base = [str(trace), "--endpoint", server.url, "--time-scale", "0", "--no-metrics"]
    result = CliRunner().invoke(app, ["replay", *base, "-o", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert result.output.count("the client delayed its own requests") == 1, result.output
    result = CliRunner().invoke(app, ["replay", *base, "-o", str(tmp_path / "b"), "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("the client delayed its own requests") == 1  # stdout: JSON
