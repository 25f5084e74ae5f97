"""Replay against serve-sim (in process): the salt keeps copies of a session from sharing cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentx.replay import ReplayOptions, run_replay
from agentx.serve_sim import SimConfig, SimServer

from .factory import T0, anthropic_session, chat_session, write


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig(port=0, fast=True)) as srv:
        yield srv


def replay(trace: Path, url: str, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    opts = ReplayOptions(
        trace=trace,
        endpoint=url,
        time_scale=0.0,
        output_dir=tmp_path / "out",
        force=True,
        progress=False,
        **kw,
    )
    return run_replay(opts).summary


def test_second_run_hits_only_without_salt(sim: SimServer, tmp_path: Path) -> None:
    rows = [ex for i in range(3) for ex in chat_session(f"s{i}", turns=3, start_ns=T0 + i)]
    trace = write(tmp_path / "t.parquet", rows)

    first = replay(trace, sim.url, tmp_path, concurrency=2)
    cache = first["cache"]
    # a fresh server, a run alone: what it reports is what the trace allows, block for block
    assert cache["reported_hit_rate"] == pytest.approx(cache["theoretical_hit_rate"], abs=1e-9)
    assert cache["server_metrics_hit_rate"] == pytest.approx(cache["reported_hit_rate"], abs=1e-9)
    assert first["config"]["server_kind"] == "serve-sim" and first["config"]["ignore_eos"] is True
    assert first["tokens"]["output"] == 3 * 3 * 4  # recorded output lengths, pinned

    salted = replay(trace, sim.url, tmp_path, concurrency=2)["cache"]["reported_hit_rate"]
    unsalted = replay(trace, sim.url, tmp_path, concurrency=2, salt=False)["cache"][
        "reported_hit_rate"
    ]
    again = replay(trace, sim.url, tmp_path, concurrency=2, salt=False)["cache"][
        "reported_hit_rate"
    ]
    # with a salt, a second run re-uses only the shared system prompt: close to a cold run
    assert salted < cache["theoretical_hit_rate"] + 0.1
    # without one, the second identical run finds nearly everything cached
    assert again > 0.95 and again > unsalted + 0.15 and again > salted + 0.15


def test_anthropic_trace_as_chat_and_as_messages(sim: SimServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "a.parquet", anthropic_session("a", turns=3))
    for api in ("chat", "messages"):
        s = replay(trace, sim.url, tmp_path, api=api)
        assert s["requests"] == {**s["requests"], "total": 3, "ok": 3, "errors": 0}
        assert s["cache"]["reported_hit_rate"] is not None and s["cache"]["reported_hit_rate"] > 0.5
