"""`agentx sweep`: one replay per concurrency level against the in-process serve-sim."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.errors import UsageError
from agentx.examples import example_path
from agentx.serve_sim import SimConfig, SimServer
from agentx.sweep import POINT_KEYS, SCHEMA, parse_levels, sweep_point

EXAMPLE = example_path("example")
runner = CliRunner()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    # modelled latency (not --fast), so lanes overlap: ~0.1 s of decode per request
    with SimServer(SimConfig(port=0, decode_tps=1000.0, prefill_tps=1e6, overhead_ms=2.0)) as srv:
        yield srv


def test_parse_levels() -> None:
    assert parse_levels("1,2, 4,16") == (1, 2, 4, 16)
    assert parse_levels("8,1") == (8, 1)  # the order given is the order run
    for bad in ("", "0", "1,x", "2,2", "-1"):
        with pytest.raises(UsageError):
            parse_levels(bad)


def test_point_from_a_summary() -> None:
    p = {"p50": 1.0, "p90": 2.0, "p99": 3.0, "mean": 1.5, "max": 4.0}
    summary = {
        "duration_s": 2.0,
        "requests": {"total": 10, "ok": 9, "errors": 1},
        "throughput": {"requests_per_s": 5.0, "output_tokens_per_s": 50.0},
        "latency_ms": {"ttft": p, "itl": {**p, "p50": 0.5}},
        "per_user_output_tokens_per_s": {**p, "p50": 20.0},
        "cache": {"reported_hit_rate": None, "theoretical_hit_rate": 0.8},
        "client": {"saturated": False},
    }
    point = sweep_point(4, summary)
    assert set(POINT_KEYS) <= set(point)
    assert (point["concurrency"], point["requests_per_s"], point["output_tokens_per_s"]) == (
        4,
        5.0,
        50.0,
    )
    assert point["per_user_output_tokens_per_s_p50"] == 20.0 and point["itl_ms_p50"] == 0.5
    assert (point["ttft_ms_p50"], point["ttft_ms_p99"]) == (1.0, 3.0)
    assert point["hit_rate_reported"] is None and point["hit_rate_theoretical"] == 0.8
    assert point["errors"] == 1 and point["results_dir"] == "c4"


def test_sweep_against_serve_sim(sim: SimServer, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", str(EXAMPLE), "--endpoint", sim.url, "--concurrency", "1,4", "-o", str(out)]
    args += ["--max-requests", "8", "--time-scale", "0", "--json", "--api-key", "sk-sweep-secret"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == json.loads((out / "sweep.json").read_text())
    assert data["schema"] == SCHEMA and data["model"] == "agentx-sim"
    assert [p["concurrency"] for p in data["points"]] == [1, 4]
    for p in data["points"]:
        assert set(POINT_KEYS) <= set(p)
        assert p["errors"] == 0 and p["requests"] == 8
        summary = json.loads((out / f"c{p['concurrency']}" / "summary.json").read_text())
        assert summary["config"]["concurrency"] == p["concurrency"]
        assert p["output_tokens_per_s"] == summary["throughput"]["output_tokens_per_s"]
        assert (out / f"c{p['concurrency']}" / "requests.parquet").exists()
        assert 0 < p["hit_rate_theoretical"] <= 1 and p["hit_rate_reported"] is not None
    one, four = data["points"]
    # four lanes overlap on the simulated engine: more tokens/s in total, fewer per user
    assert four["output_tokens_per_s"] > 1.8 * one["output_tokens_per_s"]
    assert four["requests_per_s"] > 1.8 * one["requests_per_s"]
    assert four["per_user_output_tokens_per_s_p50"] <= one["per_user_output_tokens_per_s_p50"]
    root = ET.fromstring((out / "sweep.svg").read_text())
    assert root.tag.endswith("svg") and len(root.findall(".//{*}polyline")) == 3
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".svg", ".html"):
            assert "sk-sweep-secret" not in f.read_text()
    assert "sk-sweep-secret" not in res.output


def test_table_output(sim: SimServer, tmp_path: Path) -> None:
    args = ["sweep", str(EXAMPLE), "--endpoint", sim.url, "--concurrency", "2"]
    args += ["-o", str(tmp_path / "s"), "--max-requests", "2", "--time-scale", "0"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "TTFT" in res.stdout and "lanes" in res.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--concurrency", "1,zero"], 2),
        (["--concurrency", "0"], 2),
        (["--concurrency", "1", "--extra-body", "[1]"], 2),
        (["--concurrency", "1"], 1),  # nothing listens there
    ],
)
def test_errors_are_one_line(extra: list[str], code: int, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    res = runner.invoke(
        app, ["sweep", str(EXAMPLE), "--endpoint", url, "-o", str(tmp_path), *extra]
    )
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output and "agentx: error:" in res.output
