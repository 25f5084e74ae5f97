"""The simulator's dense block ids: :class:`DenseIds` and :class:`Renumberer` against a plain
dict numbering chained hashes in order of first appearance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.hashing import chain_ids
from agentx.simulate.dense import DenseIds, Renumberer

# (thread, fork from: thread or None, blocks appended): a turn extends its thread's ids
turns = st.lists(
    st.tuples(st.integers(0, 5), st.none() | st.integers(0, 5), st.integers(0, 40)),
    max_size=60,
)


def _chains(plan: list[tuple[int, int | None, int]]) -> list[tuple[str, np.ndarray]]:
    """Each turn's chained hashes: a thread grows by fresh ids, or restarts from a prefix of
    another thread's ids (a fork, as a subagent or a compaction shares a prefix)."""
    ids: dict[int, np.ndarray] = {}
    nxt = 0
    out = []
    for thread, fork, add in plan:
        mine = ids.get(thread, np.zeros(0, dtype=np.int64))
        if fork is not None and fork in ids:
            mine = ids[fork][: len(ids[fork]) // 2 + 1]
        mine = np.concatenate([mine, np.arange(nxt, nxt + add, dtype=np.int64)])
        nxt += add
        ids[thread] = mine
        out.append((str(thread), chain_ids(mine)))
    return out


def _reference(chains: list[np.ndarray], first: int) -> list[list[int]]:
    named: dict[int, int] = {}
    return [[named.setdefault(int(h), first + len(named)) for h in c] for c in chains]


@settings(max_examples=150, deadline=None)
@given(turns, st.sampled_from([1, 2, 7, 1 << 18]), st.integers(0, 1), st.sampled_from([4, 1 << 22]))
def test_renumberer_numbers_chains_as_a_dict_does(
    plan: list[tuple[int, int | None, int]], buffer: int, first: int, largest: int
) -> None:
    chains = _chains(plan)
    numbers = Renumberer(max_threads=3, first_id=first)
    # tiny buffers: lookups cross levels; a tiny largest merge: many levels left unmerged
    numbers.index = DenseIds(buffer, first_id=first, largest_merge=largest)
    got = [numbers.ids(h, t).tolist() for t, h in chains]
    want = _reference([h for _, h in chains], first)
    assert got == want
    assert numbers.index.size == len({int(h) for _, c in chains for h in c})


@settings(max_examples=100, deadline=None)
@given(turns, st.sampled_from([1, 3, 1 << 18]), st.sampled_from([3, 1 << 22]))
def test_dense_ids_of_whole_chains_and_their_tails(
    plan: list[tuple[int, int | None, int]], buffer: int, largest: int
) -> None:
    """A call may pass a chain whole or only past a prefix an earlier call named."""
    index = DenseIds(buffer, largest_merge=largest)
    last: dict[str, list[int]] = {}
    seen: dict[int, int] = {}
    for thread, hashes in _chains(plan):
        prev, now = last.get(thread, []), hashes.tolist()
        shared = next((i for i, (a, b) in enumerate(zip(prev, now, strict=False)) if a != b), None)
        k = min(len(prev), len(now)) if shared is None else shared
        k = k if len(hashes) % 2 else 0  # the tail past what the thread named, or all of it
        got = index.ids(hashes[k:]).tolist()
        assert got == [seen.setdefault(int(h), len(seen)) for h in hashes[k:]]
        for h in hashes[:k]:
            assert int(h) in seen
        last[thread] = now
