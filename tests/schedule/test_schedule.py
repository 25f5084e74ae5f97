"""The schedule's rules on hand-built trees with known answers (a virtual clock: exact times)."""

from __future__ import annotations

import pytest

from agentx.core.examples import example_path
from agentx.formats import load_exchanges
from agentx.schedule import Phase, Schedule, ScheduleOptions, TreeSpec
from agentx.schedule.virtual import run_virtual
from agentx.workload.plan import build_plan
from agentx.workload.trees import tree_of

from .helpers import chain, play, sends, stream, tree

# -- a plain replay: turn 0 start, recorded think times, scale and cap -------------------------


def test_turns_follow_their_recorded_gaps_end_to_start() -> None:
    t = chain("t", [0, 3, 10])  # api 1 s: gaps of 2 s and 6 s
    assert sends(play([t])[1]) == [(0, 0, 0.0), (0, 1, 3.0), (0, 2, 10.0)]
    # a server twice as slow: the gaps stay, the starts move
    assert sends(play([t], service_s=2.0)[1]) == [(0, 0, 0.0), (0, 1, 4.0), (0, 2, 12.0)]
    assert sends(play([t], time_scale=0.5)[1]) == [(0, 0, 0.0), (0, 1, 2.0), (0, 2, 6.0)]
    assert sends(play([t], max_think_s=1.0)[1]) == [(0, 0, 0.0), (0, 1, 2.0), (0, 2, 4.0)]


def test_lanes_take_trees_in_order_and_recycle_with_a_new_instance() -> None:
    trees = [chain("a", [0]), chain("b", [0])]
    schedule, played = play(trees, lanes=(0, 1, 2), recycle=True, max_requests=5)
    got = [(p.send.lane, p.send.tree, p.send.copy) for p in played]
    assert got[:3] == [(0, 0, 0), (1, 1, 0), (2, 0, 1)]  # a third lane wraps onto tree a
    assert len({p.send.instance for p in played}) == 5  # every copy has its own marker
    assert schedule.measured_sent == 5 and schedule.trees_started >= 5


def test_without_recycling_each_tree_runs_once() -> None:
    schedule, played = play([chain("a", [0, 1]), chain("b", [0])], lanes=(0, 1, 2))
    assert sorted((p.send.tree, p.send.turn) for p in played) == [(0, 0), (0, 1), (1, 0)]
    assert schedule.trees_completed == 2 and schedule.done


# -- spawn and join ------------------------------------------------------------------------


def spawn_tree(child_end_s: float | None = None) -> TreeSpec:
    main = stream("main", [(0, 1), (10, 11)])
    child = stream("c", [(2, 3), (4, 8)], parent=0, spawn=0, end_s=child_end_s)
    return tree("t", main, child)


def test_a_joining_turn_waits_for_its_subagent_then_its_think_time_from_the_join() -> None:
    t = spawn_tree()
    assert t.streams[1].join_turn == 1
    # at recorded speed, everything lands where it was recorded
    assert sends(play([t])[1]) == [(0, 0, 0.0), (1, 0, 2.0), (1, 1, 4.0), (0, 1, 10.0)]
    # a fast server (0.5 s a request): the child starts 1 s after its spawning turn ended, and
    # the parent's next turn comes 2 s (10 - 8) after the child ended, not 9 s after its own
    # previous turn: child 1.5-2.0, 3.0-3.5, parent at 5.5
    got = sends(play([t], service_s=0.5)[1])
    assert got == [(0, 0, 0.0), (1, 0, 1.5), (1, 1, 3.0), (0, 1, 5.5)]


def test_a_slow_subagent_holds_its_parent_and_the_think_time_follows_the_join() -> None:
    t = spawn_tree()
    got = sends(play([t], service_s=5.0)[1])
    # parent 0-5; child 6-11, 12-17; parent's join turn 17 + 2 (not 5 + 9 = 14)
    assert got == [(0, 0, 0.0), (1, 0, 6.0), (1, 1, 12.0), (0, 1, 19.0)]


def test_the_subagents_recorded_wrap_up_counts_before_the_join() -> None:
    t = spawn_tree(child_end_s=9.0)  # the subagent ended 1 s after its last request
    got = sends(play([t], service_s=0.5)[1])
    assert got[-1] == (0, 1, 5.5)  # child's request ends 3.5, wrap-up to 4.5, think 1 s


def test_the_harness_rule_drops_the_spawn_gap_and_the_think_time_after_the_join() -> None:
    t = spawn_tree()
    got = sends(play([t], service_s=0.5, spawn_join="harness")[1])
    # child right at its spawning turn's end (0.5), parent at max(0.5 + 9, child end 2.5)
    assert got == [(0, 0, 0.0), (1, 0, 0.5), (1, 1, 2.0), (0, 1, 9.5)]
    slow = sends(play([t], service_s=5.0, spawn_join="harness")[1])
    assert slow[-1] == (0, 1, 16.0)  # the child ends at 16: the parent goes at once


def test_a_child_that_started_before_its_spawning_turn_ended_starts_from_its_send() -> None:
    main = stream("main", [(0, 5), (10, 11)])
    child = stream("c", [(2, 3)], parent=0, spawn=0)
    got = sends(play([tree("t", main, child)], service_s=1.0)[1])
    assert got[:2] == [(0, 0, 0.0), (1, 0, 2.0)]


def test_a_background_child_does_not_hold_its_parent_but_keeps_its_lane() -> None:
    main = stream("main", [(0, 1), (3, 4)])
    child = stream("bg", [(2, 3), (30, 31)], parent=0, spawn=0)
    t = tree("t", main, child)
    assert t.streams[1].join_turn is None
    _schedule, played = play([t, chain("next", [0])], lanes=(0,))
    got = [(p.send.tree, p.send.stream, p.send.turn, p.sent_s) for p in played]
    assert got == [(0, 0, 0, 0.0), (0, 1, 0, 2.0), (0, 0, 1, 3.0), (0, 1, 1, 30.0), (1, 0, 0, 31.0)]
    assert {p.send.instance for p in played if p.send.tree == 0} == {0}  # one marker per tree


def test_the_bundled_example_waits_for_its_subagent_before_the_recorded_0_4_s() -> None:
    # S2 of the example trace: main turn 1 was sent 0.4 s after subagent agent-1 ended, 8.8 s
    # after main turn 0 ended. Replayed against a server as fast as the recording, main turn 1
    # must come 0.4 s after the subagent, not 0.4 s after main turn 0.
    plan = build_plan(load_exchanges(example_path("example")))
    session = next(s for s in plan.sessions if s.session_id == "S2")
    t = tree_of(session)
    _, played = play([t])
    sub = [p for p in played if p.send.stream == 1]
    main = [p for p in played if p.send.stream == 0]
    assert main[1].sent_s - sub[-1].ended_s == pytest.approx(0.4, abs=0.01)
    assert main[1].sent_s - main[0].ended_s == pytest.approx(8.82, abs=0.01)


# -- snapshot start and warm-up ------------------------------------------------------------


def test_warmup_primes_the_last_request_before_t_star_then_measures_from_t_star() -> None:
    t = chain("t", [0, 10, 20, 30, 40])
    schedule, played = play([t], start_ratio=(0.5, 0.5))  # t* = 20
    assert [(p.send.turn, p.send.warmup, p.send.primer, p.send.max_tokens) for p in played] == [
        (1, True, True, 1),
        (2, False, False, None),
        (3, False, False, None),
        (4, False, False, None),
    ]
    assert schedule.profiling_started_s == 1.0  # the primer's end
    assert [p.sent_s for p in played] == [0.0, 1.0, 11.0, 21.0]
    (start,) = schedule.lane_starts
    assert (start.t_star_s, start.position, start.primers) == (20.0, 0.5, 1)


def primer_trees() -> list[TreeSpec]:
    # t* = 10 in both: x's primer started 10 s before it, y's 6 s before
    return [chain("x", [0, 10, 20]), chain("y", [0, 4, 20])]


def test_primers_are_spread_so_every_tree_reaches_t_star_together() -> None:
    _, played = play(primer_trees(), lanes=(0, 1), start_ratio=(0.5, 0.5))
    primers = {p.send.tree: p.sent_s for p in played if p.send.primer}
    assert primers == {0: 0.0, 1: 4.0}
    measured = sorted((p.send.tree, p.send.turn, p.sent_s) for p in played if not p.send.warmup)
    # the window starts at 5 (y's primer ends); x resumes at once, y keeps its 10 s offset
    assert measured == [(0, 1, 5.0), (0, 2, 15.0), (1, 2, 15.0)]


def test_burst_sends_primers_at_once_and_starts_every_lane_at_once() -> None:
    trees = primer_trees()
    _, played = play(trees, lanes=(0, 1), start_ratio=(0.5, 0.5), burst=True)
    assert [p.sent_s for p in played if p.send.primer] == [0.0, 0.0]
    assert sorted(p.sent_s for p in played if not p.send.warmup)[:2] == [1.0, 1.0]


def test_the_system_idle_cap_bounds_the_primers_spread() -> None:
    trees = primer_trees()
    _, played = play(trees, lanes=(0, 1), start_ratio=(0.5, 0.5), system_idle_cap_s=3.0)
    assert [p.sent_s for p in played if p.send.primer] == [0.0, 0.0]  # leads 10, 6 -> 3, 3


def test_accelerated_warmup_sends_n_per_lane_back_to_back_then_hands_off_at_offsets() -> None:
    t = chain("t", [0, 10, 20, 30, 40])
    schedule, played = play([t], start_ratio=(0.5, 0.5), warmup=2)
    got = [(p.send.turn, p.send.warmup, p.send.max_tokens, p.sent_s) for p in played]
    # turn 4 is 20 s after t*: the earliest measured request of all trees goes first, at once
    assert got == [(1, True, 1, 0.0), (2, True, 1, 1.0), (3, True, 1, 2.0), (4, False, None, 3.0)]
    assert schedule.profiling_started_s == 3.0
    other = chain("u", [0, 5, 10, 15, 20, 25, 30, 35, 40])  # t* = 20: turn 4 (20) goes next
    _, played = play([t, other], lanes=(0, 1), start_ratio=(0.5, 0.5), warmup=2)
    first = {}
    for p in played:
        if not p.send.warmup:
            first.setdefault(p.send.tree, (p.send.turn, p.sent_s))
    # after 2 warm-up requests, u resumes at turn 6 (30 s: 10 s after t*) and t at turn 4 (40 s:
    # 20 s after t*): 10 s apart, as recorded
    assert first[1][0] == 6 and first[0][0] == 4
    assert first[0][1] - first[1][1] == pytest.approx(10.0)


def test_accelerated_warmup_recycles_a_finished_tree_and_holds_the_rest() -> None:
    _schedule, played = play([chain("a", [0, 5])], warmup=3, recycle=True, max_requests=2)
    got = [(p.send.copy, p.send.turn, p.send.warmup) for p in played]
    assert got == [(0, 0, True), (0, 1, True), (1, 0, True), (1, 1, False), (2, 0, False)]


def test_a_parent_waiting_on_a_child_at_t_star_resumes_after_it() -> None:
    main = stream("main", [(0, 1), (10, 11)])
    child = stream("c", [(2, 3), (6, 8)], parent=0, spawn=0)
    _, played = play([tree("t", main, child)], start_ratio=(0.5, 0.5))  # t* = 5
    got = [(p.send.stream, p.send.turn, p.send.primer, p.sent_s) for p in played]
    # primers: main turn 0 (lead 5) at 0, child turn 0 (lead 3) at 2; window opens at 3
    assert got == [(0, 0, True, 0.0), (1, 0, True, 2.0), (1, 1, False, 3.0), (0, 1, False, 7.0)]


def test_a_stop_during_the_warmup_opens_no_measured_window() -> None:
    t = chain("t", [0, 10, 20, 30, 40])
    schedule, played = play([t], start_ratio=(0.5, 0.5), warmup=2, until_s=0.5)
    assert [(p.send.turn, p.send.warmup) for p in played] == [(1, True)]  # the one in flight
    assert schedule.done and schedule.phase is Phase.WARMUP
    assert schedule.profiling_started_s is None


def test_a_failed_warmup_request_is_reported() -> None:
    schedule = Schedule([chain("t", [0, 10, 20])], ScheduleOptions(start_ratio=(0.5, 0.5)))
    run_virtual(schedule, lambda send: 1.0, ok=lambda send: not send.primer)
    assert [(s.turn, s.primer) for s in schedule.warmup_failures] == [(0, True)]


# -- idle caps -----------------------------------------------------------------------------


def test_the_trace_idle_cap_pulls_a_trees_timers_in() -> None:
    t = chain("t", [0, 100, 110])
    schedule, played = play([t], trace_idle_cap_s=10.0)
    assert [p.sent_s for p in played] == [0.0, 11.0, 21.0]  # 99 s idle -> 10; 9 s kept
    assert schedule.trace_idle.jumps == 1 and schedule.trace_idle.skipped_s == pytest.approx(89)


def test_the_system_idle_cap_only_acts_when_nothing_is_in_flight() -> None:
    quiet = chain("quiet", [0, 100])
    busy = chain("busy", [float(k) for k in range(10)])  # back to back until 10
    _schedule, played = play([quiet, busy], lanes=(0, 1), system_idle_cap_s=5.0)
    second = next(p.sent_s for p in played if p.send.tree == 0 and p.send.turn == 1)
    assert second == 15.0  # idle from 10 (busy's end), not from 1 (quiet's end)
    _, played = play([quiet, busy], lanes=(0, 1), trace_idle_cap_s=5.0)
    assert next(p.sent_s for p in played if p.send.tree == 0 and p.send.turn == 1) == 6.0


def test_the_trace_cap_is_a_watchdog_so_the_system_cap_keeps_trees_apart() -> None:
    # both trees go idle at 1; nothing is in flight, so the system cap pulls every timer in by
    # the same amount at once; the trace cap (300 s) would only act at 301, had they waited
    a, b = chain("a", [0, 500]), chain("b", [0, 520])
    schedule, played = play([a, b], lanes=(0, 1), trace_idle_cap_s=300.0, system_idle_cap_s=10.0)
    second = {p.send.tree: p.sent_s for p in played if p.send.turn == 1}
    # a's at 11 (b's moved with it to 31); a's ends at 12, the client is idle again: b's at 22
    assert second == {0: 11.0, 1: 22.0}
    assert schedule.system_idle.jumps == 2 and schedule.trace_idle.jumps == 0


def test_idle_caps_move_a_trees_timers_together() -> None:
    main = stream("main", [(0, 1), (50, 51)])
    child = stream("c", [(40, 41), (45, 46)], parent=0, spawn=0)  # background, 39 s after spawn
    t = tree("t", main, child)
    _, played = play([t], trace_idle_cap_s=4.0)
    got = {(p.send.stream, p.send.turn): p.sent_s for p in played}
    assert got[(1, 0)] == 5.0  # 1 + cap
    assert got[(0, 1)] == 15.0  # moved with the child's start: 10 s after it
    assert got[(1, 1)] == 10.0  # 4 s after the child's first request ended (at 6)


# -- stopping ------------------------------------------------------------------------------


def test_duration_counts_from_the_measured_windows_start_and_lets_requests_drain() -> None:
    t = chain("t", [0, 10, 20, 30, 40])
    schedule, played = play([t], start_ratio=(0.5, 0.5), duration_s=15.0, service_s=3.0)
    measured = [(p.send.turn, p.sent_s, p.ended_s) for p in played if not p.send.warmup]
    assert measured == [(2, 3.0, 6.0), (3, 15.0, 18.0)]  # turn 4 would be due at 27 > 3 + 15
    assert schedule.stopped and schedule.done and schedule.phase is Phase.PROFILING


def test_max_requests_counts_measured_requests_only() -> None:
    t = chain("t", [0, 1, 2, 3, 4, 5])
    _, played = play([t], warmup=2, max_requests=2)
    assert [(p.send.turn, p.send.warmup) for p in played] == [
        (0, True),
        (1, True),
        (2, False),
        (3, False),
    ]
