"""Open-loop replay against serve-sim in process: achieved arrival rate ~ offered, the cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentx.core.errors import UsageError
from agentx.replay import ReplayOptions, run_replay
from agentx.serve_sim import SimConfig, SimServer

from .factory import T0, chat_session, write


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig.of(port=0, fast=True)) as srv:
        yield srv


def replay(trace: Path, url: str, out: Path, **kw: Any) -> dict[str, Any]:
    kw.setdefault("time_scale", 0.0)
    opts = ReplayOptions.of(
        trace=trace, endpoint=url, output_dir=out, force=True, progress=False, **kw
    )
    return run_replay(opts).summary.to_json()


def sessions(n: int, turns: int) -> list[Any]:
    return [ex for i in range(n) for ex in chat_session(f"s{i}", turns=turns, start_ns=T0 + i)]


def test_session_rate_achieves_the_offered_rate(sim: SimServer, tmp_path: Path) -> None:
    """120 sessions arriving as a Poisson process at 40/s, cap far above what they need."""
    trace = write(tmp_path / "t.parquet", sessions(120, 2))
    s = replay(trace, sim.url, tmp_path / "out", session_rate=40.0, concurrency=64, seed=5)
    sched = s["schedule"]
    assert sched["mode"] == "open_loop" and sched["arrival_unit"] == "session"
    assert sched["offered_session_rate"] == 40.0
    assert sched["arrivals_started"] == 120 and s["requests"]["total"] == 240
    # 120 exponential gaps: the realised rate is within ~3 standard errors (9 %) of 40/s;
    # generous for a loaded machine, which can only delay starts, by milliseconds each
    assert sched["achieved_session_rate"] == pytest.approx(40.0, rel=0.3)
    assert sched["arrivals_missed"] == 0
    assert s["sessions"] == {"started": 120, "completed": 120}
    assert s["config"]["session_rate"] == 40.0 and s["config"]["arrival"] == "poisson"
    assert not any("open loop" in w for w in s.get("warnings", []))


def test_gamma_arrivals_and_two_workers_share_the_rate(sim: SimServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", sessions(60, 1))
    s = replay(
        trace,
        sim.url,
        tmp_path / "out",
        session_rate=30.0,
        arrival="gamma",
        burstiness=0.5,
        concurrency=16,
        workers=2,
    )
    sched = s["schedule"]
    assert sched["offered_session_rate"] == pytest.approx(30.0)
    assert sched["concurrency_cap"] == 16
    assert sched["arrivals_started"] == 60
    assert sched["achieved_session_rate"] == pytest.approx(30.0, rel=0.5)


def test_the_cap_holds_arrivals_back_and_says_so(tmp_path: Path) -> None:
    """Sessions that take ~0.3 s each, offered at 200/s with 2 slots: they queue."""
    slow = SimConfig.of(port=0, decode_tps=20.0, overhead_ms=0.0, prefill_tps=1e9)
    trace = write(tmp_path / "t.parquet", sessions(12, 1))
    with SimServer(slow) as srv:
        s = replay(trace, srv.url, tmp_path / "out", session_rate=200.0, concurrency=2, seed=1)
    sched = s["schedule"]
    assert sched["arrivals_started"] == 12 and sched["concurrency_cap"] == 2
    assert sched["arrivals_waited_for_slot"] >= 8
    assert sched["achieved_session_rate"] < 0.25 * 200.0
    assert s["requests"]["total"] == 12 and s["requests"]["ok"] == 12
    assert any("waited for a free slot" in w for w in s["warnings"])


def test_request_rate_sends_every_request_alone(sim: SimServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", sessions(5, 4))
    s = replay(
        trace,
        sim.url,
        tmp_path / "out",
        request_rate=50.0,
        concurrency=8,
        time_scale=1.0,  # think times do not apply: requests arrive, not turns
    )
    sched = s["schedule"]
    assert sched["arrival_unit"] == "request" and sched["offered_request_rate"] == 50.0
    assert sched["arrivals_started"] == 20 and s["requests"]["total"] == 20
    assert s["requests"]["ok"] == 20
    assert sched["achieved_request_rate"] == pytest.approx(50.0, rel=0.5)


def test_duration_bounds_an_open_loop_run(sim: SimServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", sessions(3, 1))
    s = replay(trace, sim.url, tmp_path / "out", session_rate=20.0, duration_s=1.5, concurrency=8)
    sched = s["schedule"]
    assert sched["arrival_window_s"] == pytest.approx(1.5, abs=0.05)
    # recycled past the trace's 3 sessions; ~30 arrivals expected in 1.5 s at 20/s
    assert 10 <= sched["arrivals_started"] <= 60
    assert sched["achieved_session_rate"] == pytest.approx(20.0, rel=0.6)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"session_rate": 1.0, "request_rate": 1.0}, "exclusive"),
        ({"arrival": "gamma"}, "add --session-rate"),
        ({"session_rate": 1.0, "burstiness": 2.0}, "--arrival gamma"),
        ({"request_rate": 1.0, "assistant": "live"}, "--assistant live"),
        ({"session_rate": -1.0}, "positive"),
    ],
)
def test_bad_open_loop_options(tmp_path: Path, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ReplayOptions.of(trace=tmp_path / "t.parquet", endpoint="http://127.0.0.1:1", **kw)
