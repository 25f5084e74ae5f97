"""`agentx replay` against a real vLLM-CPU (prefix caching, cached_tokens and /metrics for real).

Skipped unless ``AGENTX_VLLM_URL`` points at a running server (see conftest.py). The replayed
trace is the bundled ``traces/example.parquet`` with a fresh marker at the start of every system
prompt, so the server cannot have any of it cached from an earlier run: then what vLLM reports
must agree with its own Prometheus counters and sit close to the theoretical hit rate of exactly
the requests sent (computed at vLLM's block size, which agentx reads from ``/metrics``).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner
from vllm_traces import fresh_system

from agentx.cli import app
from agentx.core.examples import example_path
from agentx.formats import load_exchanges
from agentx.store import write_trace
from agentx.store.results import read_requests

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = example_path("example")
SESSIONS = "3"  # enough sessions for shared prefixes, few enough for a 2-core CPU


@pytest.fixture(scope="module")
def fresh_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not EXAMPLE.exists():
        pytest.fail(f"{EXAMPLE} is missing (scripts/make_example_trace.py builds it)")
    marker = f"run {secrets.token_hex(8)}\n"
    path = tmp_path_factory.mktemp("trace") / "example-fresh.parquet"
    write_trace(path, [fresh_system(ex, marker) for ex in load_exchanges(EXAMPLE)])
    return path


def replay(*args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(app, ["replay", *args])
    summary = orjson.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.exit_code, summary, result.stderr


def test_replay_example_trace_against_vllm(
    vllm_url: str, fresh_trace: Path, tmp_path: Path
) -> None:
    code, s, stderr = replay(
        str(fresh_trace),
        "--endpoint",
        vllm_url + "/v1",
        "--json",
        "-o",
        str(tmp_path / "r"),
        "--sessions",
        SESSIONS,
        "--concurrency",
        "2",
        "--time-scale",
        "0",
        "--timeout",
        "300",
    )
    assert code == 0, stderr
    assert s["schema"] == "agentx.summary/1"
    assert s["requests"]["errors"] == 0 and s["requests"]["ok"] == s["requests"]["total"] > 0
    assert s["config"]["server_kind"] == "vllm" and s["config"]["ignore_eos"] is True
    assert s["cache"]["block_size"] == 128  # read from vllm:cache_config_info
    # ignore_eos + min_tokens pin each answer to the recorded output length
    records = read_requests(tmp_path / "r" / "requests.parquet")
    assert all(r.completion_tokens == r.expected_completion_tokens for r in records)
    assert all(r.cached_tokens is not None for r in records)
    reported = s["cache"]["reported_hit_rate"]
    server = s["cache"]["server_metrics_hit_rate"]
    theoretical = s["cache"]["theoretical_hit_rate"]
    assert reported is not None and server is not None
    assert reported == pytest.approx(server, abs=0.02)
    assert reported == pytest.approx(theoretical, abs=0.08), (reported, server, theoretical)
    for key in ("ttft", "ttfc", "itl", "tpot", "e2e"):
        assert set(s["latency_ms"][key]) == {"p50", "p90", "p99", "mean", "max"}
    assert s["latency_ms"]["ttft"]["p50"] is not None


def test_unmeetable_slo_exits_3(vllm_url: str, fresh_trace: Path, tmp_path: Path) -> None:
    code, s, stderr = replay(
        str(fresh_trace),
        "--endpoint",
        vllm_url,
        "--json",
        "-o",
        str(tmp_path / "r"),
        "--max-requests",
        "2",
        "--time-scale",
        "0",
        "--slo",
        "ttft_p99<=1us",
    )
    assert code == 3, stderr
    assert s["slo"]["passed"] is False
    assert s["slo"]["checks"][0]["metric"].startswith("ttft")
