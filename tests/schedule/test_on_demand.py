"""Trees supplied on demand (``Schedule(n, options)`` + ``provide``): the same schedule as with
every tree given up front, whatever the moment each one arrives."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentx.schedule import Phase, TreeSpec
from agentx.schedule.arrivals import Arrivals
from agentx.schedule.virtual import Played, run_virtual

from .helpers import chain, schedule_of, stream, tree

TREES = [
    tree(
        "a",
        stream("main", [(0, 1), (5, 6), (20, 21), (30, 31)]),
        stream("sub", [(2, 3), (4, 4.5)], parent=0, spawn=0),
    ),
    chain("b", [0, 2, 4, 40]),
    chain("c", [0, 10, 11, 12, 13]),
    chain("d", [0, 3]),
]
OPTIONS = {
    "plain": {"lanes": (0, 1)},
    "snapshot": {"lanes": (0, 1, 2), "start_ratio": (0.25, 0.75), "seed": 7, "warmup": 2},
    "recycled": {"lanes": (0, 1), "recycle": True, "max_requests": 25, "system_idle_cap_s": 2.0},
    "window": {"lanes": (0, 1), "recycle": True, "duration_s": 60.0, "trace_idle_cap_s": 3.0},
    "open": {"lanes": (0, 1), "arrivals": Arrivals(0.5, seed=3)},
    "open-recycled": {
        "lanes": (0, 1, 2),
        "recycle": True,
        "duration_s": 40.0,
        "arrivals": Arrivals(1.0, "gamma", 0.5, seed=5),
    },
}


def _service(trees: Sequence[TreeSpec | None], send: object) -> float:
    spec = trees[send.tree]  # type: ignore[attr-defined]
    assert spec is not None
    t = spec.streams[send.stream].turns[send.turn]  # type: ignore[attr-defined]
    return 0.5 * (t.end_s - t.start_s)


def _seen(trees: Sequence[TreeSpec | None], played: list[Played]) -> list[tuple[object, ...]]:
    out = []
    for p in played:
        spec = trees[p.send.tree]
        assert spec is not None
        s = p.send
        out.append((spec.tree_id, s.lane, s.copy, s.stream, s.turn, round(p.sent_s, 6), s.primer))
    return out


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_trees_on_demand_give_the_schedule_of_trees_up_front(name: str) -> None:
    eager = schedule_of(TREES, **OPTIONS[name])
    want = _seen(TREES, run_virtual(eager, lambda s: _service(TREES, s)))
    asked: list[int] = []

    def supply(i: int) -> TreeSpec:
        asked.append(i)
        return TREES[i]

    lazy = schedule_of(len(TREES), **OPTIONS[name])
    got = _seen(TREES, run_virtual(lazy, lambda s: _service(TREES, s), supply=supply))
    assert got == want and got
    assert len(asked) == len(set(asked))  # each tree supplied once, recycled copies included
    assert lazy.lane_starts == eager.lane_starts
    assert lazy.arrival_log() == eager.arrival_log()


def test_a_tree_with_nothing_to_replay_is_skipped_as_if_absent() -> None:
    with_empty: list[TreeSpec | None] = [TREES[0], None, TREES[1], None, TREES[2]]
    present = [t for t in with_empty if t is not None]
    for name in ("plain", "snapshot", "recycled"):
        want = _seen(present, run_virtual(schedule_of(present, **OPTIONS[name]), lambda s: 0.5))
        lazy = schedule_of(len(with_empty), **OPTIONS[name])
        got = _seen(with_empty, run_virtual(lazy, lambda s: 0.5, supply=lambda i: with_empty[i]))
        assert got == want, name


def test_nothing_moves_until_every_lane_has_its_first_tree_then_primers_spread() -> None:
    schedule = schedule_of(len(TREES), lanes=(0, 1), start_ratio=(0.5, 0.5))
    schedule.start(0.0)
    assert schedule.wanted == [0, 1]
    assert schedule.poll(0.0) == [] and schedule.next_due_s() is None
    schedule.provide(0, TREES[0], 1.0)
    assert schedule.wanted == [1] and schedule.poll(1.0) == []
    assert schedule.phase is Phase.WARMUP and not schedule.done
    schedule.provide(1, TREES[1], 2.5)  # the warm-up is laid out from now
    assert schedule.wanted == []
    due = schedule.next_due_s()
    assert due is not None and due >= 2.5
    sends = schedule.poll(100.0)
    assert sends and all(s.primer for s in sends)


def test_a_lane_waits_for_its_next_tree_and_the_run_is_not_done_meanwhile() -> None:
    schedule = schedule_of(3, lanes=(0,))
    schedule.start(0.0)
    schedule.provide(0, chain("x", [0]), 0.0)
    assert schedule.phase is Phase.BOUNDARY
    schedule.begin_profiling(0.0)
    (send,) = schedule.poll(0.0)
    schedule.complete(send.id, 1.0)
    assert schedule.drain_finished() == [send.instance] and schedule.drain_finished() == []
    assert schedule.wanted == [1] and not schedule.done
    schedule.provide(1, None, 1.5)  # nothing in it: the lane asks for the next
    assert schedule.wanted == [2] and not schedule.done
    schedule.provide(2, chain("z", [0]), 2.0)
    (send,) = schedule.poll(2.0)
    assert send.tree == 2 and send.due_s == 2.0
    schedule.complete(send.id, 3.0)
    assert schedule.done


def test_a_stop_while_waiting_for_a_tree_ends_the_run() -> None:
    schedule = schedule_of(2, lanes=(0, 1))
    schedule.start(0.0)
    schedule.stop(0.5)
    assert schedule.wanted == [] and schedule.done
    schedule.provide(0, TREES[0], 1.0)  # late: ignored
    assert schedule.poll(1.0) == [] and schedule.done


def test_an_open_loop_arrival_starts_when_its_tree_is_supplied() -> None:
    """Arrivals at 1 s and 2 s on two lanes: the first tree is read in 0.25 s, so that arrival
    starts late (and the log says so); a lane waiting for a tree is not free for the next."""
    schedule = schedule_of(2, lanes=(0, 1), arrivals=Arrivals(1.0, "constant"))
    schedule.start(0.0)
    assert schedule.phase is Phase.BOUNDARY and schedule.wanted == []  # trees arrive later
    schedule.begin_profiling(0.0)
    assert schedule.poll(1.0) == [] and schedule.wanted == [0]
    schedule.provide(0, chain("a", [0]), 1.25)
    (first,) = schedule.poll(1.25)
    assert first.tree == 0 and first.lane == 0 and first.due_s == 1.25
    assert schedule.poll(2.0) == [] and schedule.wanted == [1]
    schedule.stop(2.1)  # the second arrival's tree was never supplied: it missed
    schedule.complete(first.id, 2.5)
    log = schedule.arrival_log()
    assert log is not None and log.due_s == (1.0,) and log.start_s == (1.25,)
    assert log.missed == 1 and schedule.done
