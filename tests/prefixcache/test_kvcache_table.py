"""BlockTable: uint64 hashes to dense ids, against a dict; growth, collisions, key 0."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.kvcache.table import BlockTable

keys64 = st.integers(0, 2**64 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(keys64, st.integers(0, 40)), max_size=80), max_size=25))
def test_ids_are_dense_stable_and_in_order_of_first_sight(batches: list[list[int]]) -> None:
    table, model = BlockTable(bits=2), {}
    for batch in batches:
        keys = np.array(batch, dtype=np.uint64)
        unknown = [k for k in batch if k not in model]
        assert table.find(keys).tolist() == [model.get(k, 0) for k in batch]
        for k in unknown:
            model.setdefault(k, len(model) + 1)
        assert table.intern(keys).tolist() == [model[k] for k in batch]
    assert table.size == len(model)
    assert table.slots >= 2 * table.size  # load at most one half


def test_a_table_grown_many_times_finds_every_key() -> None:
    table = BlockTable(bits=2)
    keys = np.arange(5000, dtype=np.uint64) << np.uint64(44)  # low bits all zero
    ids = table.intern(keys)
    assert ids.tolist() == list(range(1, 5001))
    assert table.find(keys[::-1]).tolist() == list(range(5000, 0, -1))
    assert table.find(np.array([1, 2**63 + 7], dtype=np.uint64)).tolist() == [0, 0]
