"""Snapshot start: t* as agentx-harness samples it, and the split into history and live streams."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from agentx.core.examples import example_path
from agentx.formats import load_exchanges
from agentx.schedule.spec import fresh, sample_t_star, split, tree_seed
from agentx.workload.plan import build_plan
from agentx.workload.trees import tree_of

from .helpers import chain, stream, tree


def test_t_star_is_the_harness_draw() -> None:
    t = chain("trace_x", [0, 10, 20, 30, 40])
    seed = int.from_bytes(hashlib.sha256(b"7:trace_x:3").digest()[:8], "big")
    assert tree_seed(7, "trace_x", 3) == seed
    expected = np.random.default_rng(seed).uniform(0.25 * 40_000, 0.75 * 40_000) / 1000
    assert sample_t_star(t, (0.25, 0.75), 7, 3) == pytest.approx(expected, abs=1e-9)
    assert sample_t_star(t, (0.25, 0.75), 7, 3) == sample_t_star(t, (0.25, 0.75), 7, 3)
    assert sample_t_star(t, (0.25, 0.75), 7, 4) != sample_t_star(t, (0.25, 0.75), 7, 3)
    assert sample_t_star(t, (0.5, 0.5), 7, 3) == 20.0  # no draw when MIN == MAX


def test_the_bundled_weka_trace_starts_where_agentx_harness_started_it() -> None:
    # agentx-harness 1.0.12, --scenario agentx --random-seed 42, lane 0 on trace_0001 logged
    # "sample_time= 54%  root_next= 17/41" (its log of that run)
    (session,) = build_plan(load_exchanges(example_path("weka") / "trace_0001.json")).sessions
    t = tree_of(session)
    t_star = sample_t_star(t, (0.25, 0.75), 42, 0)
    assert round(100 * (t_star - t.start_s) / (t.last_start_s - t.start_s)) == 54
    assert split(t, t_star).next_turn == (17,) and split(t, t_star).primer(0) == 16


def test_split_history_primers_and_live_children() -> None:
    main = stream("main", [(0, 1), (10, 11), (20, 21)])
    running = stream("run", [(2, 3), (6, 8)], parent=0, spawn=0)  # mid-flight at t*=5
    done = stream("done", [(1.5, 2)], parent=0, spawn=0)  # finished before t*
    later = stream("later", [(12, 13)], parent=0, spawn=1)  # spawned by a turn after t*
    cut = split(tree("t", main, running, done, later), 5.0)
    assert cut.next_turn == (1, 1, None, 0)
    assert cut.spawned == (True, True, True, False)
    assert [cut.primer(i) for i in range(4)] == [0, 0, None, None]


def test_a_child_whose_spawning_turn_is_history_is_live_before_its_first_request() -> None:
    main = stream("main", [(0, 1), (10, 11)])
    child = stream("c", [(4, 5)], parent=0, spawn=0)  # spawned at 1, first request at 4
    cut = split(tree("t", main, child), 3.0)
    assert cut.next_turn == (1, 0) and cut.spawned == (True, True)
    assert cut.primer(1) is None  # nothing of it to warm


def test_fresh_starts_every_stream_at_turn_zero_and_spawns_only_the_root() -> None:
    t = tree("t", stream("main", [(0, 1)]), stream("c", [(0, 1)], parent=0, spawn=0))
    assert fresh(t).next_turn == (0, 0) and fresh(t).spawned == (True, False)
