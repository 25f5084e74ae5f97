"""``--workers auto``: the rule on fake measurements, the measurements themselves, a real run."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentx.replay import ReplayOptions, run_replay
from agentx.replay.autoworkers import (
    FALLBACK_STREAM_RATE,
    auto_workers,
    capacity_chunks_per_s,
    stream_chunks_per_s,
    usable_cores,
)
from agentx.serve_sim import SimConfig, SimServer

from .factory import T0, chat_session, write
from .fault_server import FaultServer


def rule(
    lanes: int, stream: float, capacity: float = 400_000.0, cores: int = 8, sessions: int = 10**6
) -> int:
    return auto_workers(
        lanes=lanes,
        sessions=sessions,
        cores=cores,
        capacity_chunks_per_s=capacity,
        stream_chunks_per_s=stream,
    )


@pytest.mark.parametrize(
    ("lanes", "stream", "expected"),
    [
        (64, 100.0, 1),  # 6,400 chunks/s: a sliver of one process
        (2000, 200.0, 2),  # 400K chunks/s at half of 400K per process
        (2000, 201.0, 3),  # just over: one more
        (10_000, 200.0, 8),  # 10 wanted, 8 cores
        (3, 1e9, 3),  # a fast server: bounded by the lanes
    ],
)
def test_the_rule_on_fake_measurements(lanes: int, stream: float, expected: int) -> None:
    assert rule(lanes, stream) == expected


def test_the_rule_never_goes_below_one_or_past_sessions() -> None:
    assert rule(1, 0.0) == 1
    assert rule(10_000, 1e6, sessions=5) == 5
    assert rule(10_000, 1e6, cores=1) == 1
    assert rule(100, math.inf) == 8  # an instant stream (everything in one read)


async def test_capacity_is_measured_on_this_machine() -> None:
    capacity = await capacity_chunks_per_s(cpu_s=0.02)
    # the lanes' data path does tens of thousands to millions of chunks per CPU-second
    assert 10_000 < capacity < 100_000_000
    assert usable_cores() >= 1


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    with FaultServer(stall_s=5.0) as srv:
        yield srv


async def test_the_stream_rate_probe(faults: FaultServer) -> None:
    kw = {"model": "m", "api_mode": "chat", "headers": {}, "params": {}, "timeout_s": 5.0}
    rate = await stream_chunks_per_s(faults.url, ignore_eos=True, **kw)  # type: ignore[arg-type]
    assert rate is not None and rate > 0
    assert faults.requests[-1]["max_tokens"] == 64 and faults.requests[-1]["ignore_eos"] is True


async def test_the_stream_rate_probe_fails_soft(faults: FaultServer) -> None:
    """No streamed answer (here a 404 under a wrong path prefix): None, the caller falls back."""
    kw = {"model": "m", "api_mode": "chat", "headers": {}, "params": {}, "timeout_s": 5.0}
    rate = await stream_chunks_per_s(faults.url + "/nowhere", ignore_eos=False, **kw)  # type: ignore[arg-type]
    assert rate is None


def test_workers_auto_in_a_real_run(tmp_path: Path) -> None:
    rows = [ex for i in range(4) for ex in chat_session(f"s{i}", turns=2, start_ns=T0 + i)]
    trace = write(tmp_path / "t.parquet", rows)
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        result = run_replay(
            ReplayOptions.of(
                trace=trace,
                endpoint=sim.url,
                concurrency=4,
                workers="auto",
                time_scale=0.0,
                output_dir=tmp_path / "out",
                progress=False,
            )
        )
    auto = result.summary.to_json()["config"]["workers_auto"]
    assert result.summary.to_json()["config"]["workers"] == auto["workers"]
    assert 1 <= auto["workers"] <= min(4, usable_cores())
    assert auto["capacity_chunks_per_s"] > 0
    # serve-sim --fast sends a short answer in one read: an unbounded rate (None), all cores
    assert auto["stream_chunks_per_s"] is None or auto["stream_chunks_per_s"] > 0
    assert auto["note"] is None or str(FALLBACK_STREAM_RATE) in auto["note"]
    assert result.summary.to_json()["requests"]["ok"] == 8
