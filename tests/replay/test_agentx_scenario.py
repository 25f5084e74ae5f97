"""--scenario agentx end to end: snapshot start, primed caches, the measured window's own server
counters, the cache-bust marker per tree, the gates (serve-sim and the fault server, in process)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.replay import run_replay
from agentx.replay.options import scenario_options
from agentx.serve_sim import SimConfig, SimServer

from .factory import chat_session, write
from .fault_server import FaultServer

MARKER = re.compile(r"^\[rid:([0-9a-f]{12})\]\n\n")


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig.of(port=0, fast=True, max_model_len=400_000)) as srv:
        yield srv


def weka_doc(trace_id: str, turns: int = 14) -> dict[str, Any]:
    """A small Weka trace: a main agent growing its context turn by turn, a subagent spawned after
    turn 2 that the main agent waits for at turn 4."""

    def req(t: float, ids: list[int]) -> dict[str, Any]:
        return {
            "t": t,
            "type": "n",
            "in": 64 * len(ids) + 10,
            "out": 8,
            "hash_ids": ids,
            "api_time": 0.5,
            "model": "m",
        }

    main = [req(10.0 * k, list(range(k + 20))) for k in range(turns)]
    sub = {
        "t": 21.0,
        "type": "subagent",
        "agent_id": "agent_1",
        "duration_ms": 12_000,
        "requests": [req(0.0, [1000, 1001]), req(4.0, [1000, 1001, 1002])],
    }
    return {
        "id": trace_id,
        "block_size": 64,
        "hash_id_scope": "local",
        "requests": [*main[:3], sub, *main[3:]],
    }


def test_agentx_scenario_on_weka_starts_mid_flight_with_primed_caches(
    sim: SimServer, tmp_path: Path
) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    for name in ("trace_a", "trace_b"):
        (weka / f"{name}.json").write_bytes(orjson.dumps(weka_doc(name)))
    options = scenario_options(
        "agentx",
        trace=weka,
        endpoint=sim.url,
        concurrency=2,
        duration_s=2.0,
        warmup=3,
        time_scale=0.02,  # recorded gaps of 10 s become 0.2 s
        output_dir=tmp_path / "out",
        progress=False,
    )
    result = run_replay(options)
    s, records = result.summary.to_json(), result.records
    cfg = s["config"]
    assert (cfg["scenario"], cfg["start_ratio"], cfg["warmup"], cfg["seed"]) == (
        "agentx",
        "0.25:0.75",
        3,  # given explicitly: it wins over the preset's 10
        42,
    )
    assert (cfg["trace_idle_cap_s"], cfg["system_idle_cap_s"], cfg["max_failed_ratio"]) == (
        300.0,
        10.0,
        0.1,
    )
    lanes = s["schedule"]["lanes"]
    assert [ln["session"] for ln in lanes] == ["trace_a", "trace_b"]
    assert all(0.25 <= ln["position"] <= 0.75 for ln in lanes)
    warm = [r for r in records if r.warmup]
    primers = sum(ln["primers"] for ln in lanes)
    assert primers >= 2 and len(warm) == primers + 2 * 3  # primers, then 3 per lane
    assert all(r.expected_completion_tokens == 1 and r.completion_tokens == 1 for r in warm)
    # each lane's first request is its last one before t*, with its whole prefix
    for ln in lanes:
        first = next(r for r in records if r.lane == ln["lane"])
        assert first.warmup and first.turn > 0 and first.theoretical_hit_tokens == 0
        assert first.prompt_tokens and first.prompt_tokens >= 64 * (first.turn + 20)
    measured = [r for r in records if not r.warmup]
    assert measured and all(r.ok for r in records)
    # the server's counters cover the measured window only (every measured request, drained too)
    assert s["server"]["queries"] == sum(r.prompt_tokens or 0 for r in measured)
    assert s["gates"]["passed"] is True and result.failure is None


def test_one_marker_per_tree_shared_by_its_subagents(tmp_path: Path) -> None:
    main = chat_session("s", turns=3, think_s=0.0)
    end0 = main[0].timing.start_wall_ns + (main[0].timing.e2e_ns or 0)
    sub = chat_session(
        "s", turns=2, thread_id="sub", start_ns=end0 + 1, parent_request_id=main[0].request_id
    )
    trace = write(tmp_path / "t.parquet", main + sub)
    with FaultServer() as srv:
        run_replay(
            scenario_options(
                None,
                trace=trace,
                endpoint=srv.url,
                concurrency=1,
                max_requests=10,
                time_scale=0.0,
                output_dir=tmp_path / "o",
                progress=False,
                scrape_metrics=False,
                preflight=False,  # the bodies counted are the lanes' only
            )
        )
        sent = list(srv.requests)
    markers: Counter[str] = Counter()
    for body in sent:
        user = next(m for m in body["messages"] if m["role"] == "user")
        assert (
            body["messages"][0]["role"] == "system"
            and "[rid:" not in body["messages"][0]["content"]
        )
        found = MARKER.match(user["content"])
        assert found
        markers[found.group(1)] += 1
    # a tree is 5 requests (3 main + 2 subagent): 10 requests are two instances, two markers
    assert sorted(markers.values()) == [5, 5]


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["replay", *args])
    return result.exit_code, result.stderr


def test_a_failed_warmup_request_fails_the_run_and_keeps_the_results(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=4, user_text="fault:http500 "))
    with FaultServer() as srv:
        code, stderr = run_cli(
            str(trace),
            "--endpoint",
            srv.url,
            "--start-ratio",
            "0.5:0.5",
            "--time-scale",
            "0",
            "--no-metrics",
            "--no-preflight",  # else the test request meets the fault first
            "-o",
            str(tmp_path / "out"),
        )
    assert code == 1
    assert (
        "agentx: run failed: warm-up request failed (session a, thread main, turn 1): "
        "HTTP 500: engine exploded" in stderr
    )
    summary = orjson.loads((tmp_path / "out" / "summary.json").read_bytes())
    assert summary["gates"]["passed"] is False and summary["requests"]["warmup"] == 1


def test_the_failed_request_gate_stops_the_run(tmp_path: Path) -> None:
    rows = chat_session("ok", turns=2) + chat_session(
        "bad",
        turns=30,
        user_text="fault:http500 ",
        start_ns=chat_session("ok")[0].timing.start_wall_ns + 1,
    )
    trace = write(tmp_path / "t.parquet", rows)
    with FaultServer() as srv:
        code, stderr = run_cli(
            str(trace),
            "--endpoint",
            srv.url,
            "--max-failed-ratio",
            "0.1",
            "--concurrency",
            "2",
            "--time-scale",
            "0",
            "--no-metrics",
            "-o",
            str(tmp_path / "out"),
        )
    assert code == 1 and "more than --max-failed-ratio 0.1" in stderr
    summary = orjson.loads((tmp_path / "out" / "summary.json").read_bytes())
    assert summary["requests"]["total"] < 32  # stopped early
    assert summary["gates"]["failed_ratio"] > 0.1
