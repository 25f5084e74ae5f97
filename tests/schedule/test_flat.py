"""Flat chains in the schedule: a parallel agent recorded among its parent's requests is ordered
against its parent's streams by the recording (barriers) and grouped apart from subagents."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentx.schedule import Schedule, ScheduleOptions, Send, TreeSpec
from agentx.schedule.spec import barriers, group_start
from agentx.schedule.virtual import run_virtual
from agentx.workload.plan import build_plan
from agentx.workload.source import open_source
from agentx.workload.trees import tree_of

from .helpers import stream, tree

FLAT = Path(__file__).parents[1] / "formats" / "data" / "weka-flat"


def flat_tree(flat: bool = True) -> TreeSpec:
    main = stream("main", [(0, 1), (5, 6), (20, 21)])
    agent = stream("fa:000", [(2, 4), (8, 9), (10, 12)], parent=0, spawn=0, flat=flat)
    sub = stream("agent_001", [(3, 11)], parent=0, spawn=0)  # joins main turn 2, as the agent
    return tree("t", main, agent, sub)


def test_a_turn_waits_for_what_ended_before_it_in_its_scope() -> None:
    t = flat_tree()
    assert barriers(t) == {
        (0, 1): ((1, 0),),  # main turn 1 (t=5) after the agent's turn 0 (2-4)
        (0, 2): ((1, 2),),  # main turn 2 (t=20) after the agent's last turn (10-12)
        (1, 0): ((0, 0),),
        (1, 1): ((0, 1),),
        (1, 2): ((0, 1),),
    }  # the subagent is a scope of its own: nothing waits for it, it waits for nothing


def test_the_main_agent_waits_for_a_slow_flat_agent() -> None:
    def sent(t: TreeSpec) -> dict[tuple[int, int], float]:
        def service(send: Send) -> float:
            if (send.stream, send.turn) == (1, 0):
                return 10.0  # the agent's first request: 10 s instead of 2
            spec = t.streams[send.stream].turns[send.turn]
            return spec.end_s - spec.start_s

        schedule = Schedule([t], ScheduleOptions(), recycle=False)
        return {(p.send.stream, p.send.turn): p.sent_s for p in run_virtual(schedule, service)}

    got = sent(flat_tree())
    assert got[(1, 0)] == 2.0
    assert got[(0, 1)] == 12.0  # recorded at 5, held until the agent's turn 0 ended
    assert sent(flat_tree(flat=False))[(0, 1)] == 5.0  # a subagent would not hold it


def test_flat_chains_and_subagents_spawned_together_are_grouped_apart() -> None:
    t = flat_tree()
    assert group_start(t, 1) == 2.0
    assert group_start(t, 2) == 3.0
    assert group_start(flat_tree(flat=False), 2) == 2.0  # one group when both are subagents


@pytest.mark.parametrize("spawn_join", ["recorded", "harness"])
def test_real_flat_traces_replay_every_request(spawn_join: str) -> None:
    plan = build_plan(open_source(FLAT))
    trees = [tree_of(s) for s in plan.sessions]
    assert sum(s.flat for t in trees for s in t.streams) == 9
    schedule = Schedule(trees, ScheduleOptions(spawn_join=spawn_join), recycle=False)
    played = run_virtual(schedule, lambda send: 0.5)
    assert len(played) == sum(t.requests for t in trees) == 454
    assert schedule.done
    # and from the harness's snapshot start with its warm-up: nothing is left stuck
    options = ScheduleOptions(
        spawn_join=spawn_join, start_ratio=(0.25, 0.75), warmup=10, duration_s=3600.0
    )
    schedule = Schedule(trees, options, lanes=(0, 1, 2), seed=42, recycle=True)
    played = run_virtual(schedule, lambda send: 0.5)
    assert schedule.done and sum(not p.send.warmup for p in played) > 100
