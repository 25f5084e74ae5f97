"""Chaining rows read as stored (a base's first ids, then a delta): the hashes of the row's full
ids, whichever rows and threads were chained before and whatever the threads held forgot."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.hashing import chain_ids
from agentx.simulate.rowchains import RowChainer
from agentx.store.rowids import RowIds

# rows in trace order: (thread, base: an earlier row or None, ids kept of it, ids added)
rows_st = st.lists(
    st.tuples(
        st.integers(0, 3), st.none() | st.integers(0, 40), st.integers(0, 30), st.integers(0, 9)
    ),
    min_size=1,
    max_size=40,
)


def _stored(
    plan: list[tuple[int, int | None, int, int]],
) -> tuple[dict[int, RowIds], list[list[int]], list[int]]:
    rows: dict[int, RowIds] = {}
    full: list[list[int]] = []
    threads = []
    nxt = 1
    for r, (thread, base, keep, add) in enumerate(plan):
        b = -1 if base is None or base >= r else base
        k = min(keep, len(full[b])) if b >= 0 else 0
        delta = list(range(nxt, nxt + add))
        nxt += add
        full.append((full[b][:k] if b >= 0 else []) + delta)
        rows[r] = RowIds(b, k, np.asarray(delta, dtype=np.int64), 4)
        threads.append(thread)
    return rows, full, threads


@settings(max_examples=200, deadline=None)
@given(rows_st, st.integers(1, 3), st.data())
def test_a_row_chains_as_its_full_ids(
    plan: list[tuple[int, int | None, int, int]], kept: int, data: st.DataObject
) -> None:
    rows, full, threads = _stored(plan)
    order = data.draw(st.lists(st.integers(0, len(plan) - 1), min_size=1, max_size=60))
    chainer = RowChainer(max_threads=kept)
    for r in order:
        got = chainer.chain(threads[r], r, rows)
        assert got.tolist() == chain_ids(full[r]).tolist()


def test_a_turn_extending_its_threads_last_row_chains_only_its_delta() -> None:
    rows, full, threads = _stored([(0, None, 0, 5), (0, 0, 5, 3), (0, 1, 8, 2)])
    chainer = RowChainer()
    for r in range(3):
        chainer.chain(threads[r], r, rows)
    assert chainer.rebuilt == 0
    fresh = RowChainer()
    assert fresh.chain(0, 2, rows).tolist() == chain_ids(full[2]).tolist()
    assert fresh.rebuilt == 2  # its bases chained on the way
