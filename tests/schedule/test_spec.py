"""Spawn and join derived from recorded times (agentx-harness's rule, weka_trace.py)."""

from __future__ import annotations

from .helpers import stream, tree


def test_a_child_joins_the_first_later_parent_turn_that_starts_after_it_ends() -> None:
    # parent[0] t=0, parent[1] t=6, parent[2] t=20; A ends 4, B ends 12.5, C ends 24
    main = stream("main", [(0, 1), (6, 7), (20, 21)])
    a = stream("A", [(1, 4)], parent=0, spawn=0)
    b = stream("B", [(1, 12.5)], parent=0, spawn=0)
    c = stream("C", [(1, 24)], parent=0, spawn=0)
    t = tree("t", main, a, b, c)
    assert [s.join_turn for s in t.streams] == [None, 1, 2, None]  # tiered; C in the background
    assert t.blockers(0, 1) == [1] and t.blockers(0, 2) == [2]


def test_a_join_at_the_exact_end_counts_and_only_turns_after_the_spawn_qualify() -> None:
    main = stream("main", [(0, 1), (5, 6), (10, 11)])
    child = stream("c", [(6, 10)], parent=0, spawn=1)  # ends exactly when parent[2] starts
    assert tree("t", main, child).streams[1].join_turn == 2
    early = stream("e", [(0.5, 0.9)], parent=0, spawn=1)  # ends before parent[1]: still [2]
    assert tree("t", main, early).streams[1].join_turn == 2


def test_a_recorded_subagent_end_beyond_its_last_request_decides_the_join() -> None:
    main = stream("main", [(0, 1), (5, 6), (10, 11)])
    child = stream("c", [(1, 4)], parent=0, spawn=0, end_s=7.5)  # wrap-up after its request
    t = tree("t", main, child)
    assert t.streams[1].finish_s == 7.5 and t.streams[1].join_turn == 2
