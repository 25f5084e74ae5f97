"""The LRU position queue: int32 positions widen before they outgrow their type."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.kvcache.queue import PositionQueue, new_positions

IDS = 40
# (push these ids) or (take this many)
OPS = st.lists(
    st.one_of(
        st.lists(st.integers(0, IDS - 1), min_size=1, max_size=300).map(lambda ids: ("push", ids)),
        st.integers(1, 50).map(lambda k: ("take", k)),
    ),
    max_size=40,
)


def _at(queue: PositionQueue, start: int) -> PositionQueue:
    """An empty queue whose next position is ``start`` (as after ``start`` entries queued)."""
    queue._base = queue.head = queue.tail = start  # the state a long run reaches
    return queue


@settings(max_examples=150, deadline=None)
@given(ops=OPS, below=st.integers(1, 2_000))
def test_positions_near_the_int32_limit_widen_and_answer_as_int64_ones(
    ops: list[tuple[str, object]], below: int
) -> None:
    start = int(np.iinfo(np.int32).max) - below  # positions cross 2**31 during the ops
    small, wide = _at(PositionQueue(), start), _at(PositionQueue(), start)
    small_pos = new_positions(IDS)
    wide_pos = np.full(IDS, -1, dtype=np.int64)
    for op, arg in ops:
        if op == "push":
            ids = np.asarray(arg, dtype=np.int64)
            # ids queued twice keep their last entry, as the cache pushes them (distinct)
            ids = ids[np.sort(np.unique(ids[::-1], return_index=True)[1])][::-1].copy()
            small_pos = small.push(ids, small_pos)
            wide_pos = wide.push(ids, wide_pos)
        else:
            assert isinstance(arg, int)
            got, want = small.take(arg, small_pos), wide.take(arg, wide_pos)
            assert got.tolist() == want.tolist()
            small_pos[got[got != 0]] = -1
            wide_pos[want[want != 0]] = -1
        assert small_pos.tolist() == wide_pos.tolist()
        assert small.live(small_pos).tolist() == wide.live(wide_pos).tolist()


def test_positions_stay_int32_while_they_fit() -> None:
    queue, pos = PositionQueue(), new_positions(8)
    for _ in range(100):
        pos = queue.push(np.arange(1, 8, dtype=np.int64), pos)
        queue.take(7, pos)
    assert pos.dtype == np.int32
    assert queue.live(pos).dtype == np.int64
