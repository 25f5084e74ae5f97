"""The stack engine's free-queue reads: one tree read per run of consecutive stamps."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentx.simulate.stack import Fenwick, _free_prefix

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.integers(1, 300), st.data())
def test_free_prefix_is_the_tree_prefix_of_live_stamps(n: int, data: st.DataObject) -> None:
    """Stamps of live entries in any order (runs falling by one, jumps, repeats): the same
    sums as reading the tree at every stamp, and ``prefix_at`` as well."""
    live = np.asarray(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    fen = Fenwick(n)
    positions = np.flatnonzero(live) + 1
    fen.add_points(positions.astype(np.int64), 1)
    if not positions.size:
        return
    picks = data.draw(st.lists(st.integers(0, positions.size - 1), max_size=40))
    runs = [positions[max(0, k - data.draw(st.integers(0, 5))) : k + 1][::-1] for k in picks]
    stamps = np.concatenate([np.zeros(0, dtype=np.int64), *runs]).astype(np.int64)
    assert _free_prefix(fen, stamps).tolist() == fen.prefix(stamps).tolist()
    for p in range(n + 1):
        assert fen.prefix_at(p) == int(fen.prefix(np.asarray([p], dtype=np.int64))[0])
