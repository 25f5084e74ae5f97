"""Runs of consecutive ids give back exactly the ids they were made from."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.simulate.dense import MAX_BLOCKS
from agentx.simulate.runs import id_runs, run_blocks, run_facts, run_ids

# runs of consecutive ids, anywhere in the int32 range (the largest ids included)
runs_of_ids = st.lists(st.tuples(st.integers(0, MAX_BLOCKS), st.integers(1, 30)), max_size=20).map(
    lambda runs: np.array(
        [i for a, k in runs for i in range(a, min(a + k, MAX_BLOCKS + 1))], dtype=np.int32
    )
)


@settings(max_examples=300, deadline=None)
@given(
    runs_of_ids
    | st.lists(st.integers(0, MAX_BLOCKS), max_size=40).map(lambda xs: np.array(xs, dtype=np.int32))
)
def test_runs_round_trip_any_ids(ids: np.ndarray) -> None:
    ids = np.asarray(ids, dtype=np.int32).reshape(-1)
    runs = id_runs(ids)
    back = run_ids(runs)
    assert back.dtype == np.int64
    assert back.tolist() == ids.tolist()
    assert run_blocks(runs) == ids.size
    # one run per break in consecutiveness: as few as the ids allow
    assert runs.shape[1] == (
        int(np.count_nonzero(np.diff(ids.astype(np.int64)) != 1)) + 1 if ids.size else 0
    )


@settings(max_examples=300, deadline=None)
@given(
    runs_of_ids
    | st.lists(st.integers(1, 60), max_size=40).map(lambda xs: np.array(xs, dtype=np.int32))
)
def test_run_facts_are_the_ids_largest_and_whether_they_are_distinct(ids: np.ndarray) -> None:
    ids = np.asarray(ids, dtype=np.int32).reshape(-1)
    top, distinct = run_facts(id_runs(ids))
    assert top == (int(ids.max()) if ids.size else 0)
    assert distinct == (np.unique(ids).size == ids.size)
