"""``union_theory``: several shards' theoretical caches replayed as one.

Each shard computes its own theory rows exactly as replay does (an unbounded cache over its
requests in send order, keeping each request's blocks from the hit on). The union of the rows
must give every request the hit a single unbounded cache would over the interleaved order; with
trees that cannot share a block (a marker in front of everything), that is each shard's own hit;
with a prefix shared before the marker (a system prompt), the shards' own hits undercount.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.theory import HitRateMeter, TheoryRow, union_theory

BS = 4

Prompt = list[int]


def shard_rows(prompts: Sequence[tuple[str, int, Prompt]], block_size: int = BS) -> list[TheoryRow]:
    """What replay writes to theory.parquet for one shard (its producer: ``HitRateMeter.row``)."""
    meter = HitRateMeter(block_size)
    return [
        meter.row(rid, sent_ns, block_hashes(toks, block_size), len(toks))
        for rid, sent_ns, toks in prompts
    ]


def one_cache(prompts: Sequence[tuple[str, int, Prompt]], block_size: int = BS) -> dict[str, int]:
    """The reference: a single unbounded cache over every prompt in send order."""
    cache = UnboundedPrefixCache(block_size)
    out = {}
    for rid, _, toks in sorted(prompts, key=lambda p: p[1]):
        out[rid] = cache.observe(block_hashes(toks, block_size), len(toks)).hit_tokens
    return out


def sessions_to_prompts(
    sessions: list[list[Prompt]], marker_first: bool, system: Prompt
) -> list[list[Prompt]]:
    """Each session's turns as full prompts: growing conversations, with a per-tree marker
    either in front of everything or after a shared system prompt (as --salt does)."""
    out = []
    for i, turns in enumerate(sessions):
        marker = [10_000 + i]
        head = [*marker, *system] if marker_first else [*system, *marker]
        conv: Prompt = []
        prompts = []
        for t in turns:
            conv = [*conv, *t]
            prompts.append([*head, *conv])
        out.append(prompts)
    return out


def split(
    sessions: list[list[Prompt]], n_shards: int, rng: random.Random
) -> tuple[list[list[tuple[str, int, Prompt]]], list[tuple[str, int, Prompt]]]:
    """Sessions i % N == I per shard, each shard's requests at increasing random times."""
    shards: list[list[tuple[str, int, Prompt]]] = [[] for _ in range(n_shards)]
    for i, prompts in enumerate(sessions):
        for k, p in enumerate(prompts):
            shards[i % n_shards].append((f"{i % n_shards}.{i}.{k}", 0, p))
    timed = []
    for sh in shards:
        t = rng.randrange(1000)
        rows = []
        for rid, _, p in sh:
            t += rng.randrange(1, 1000)
            rows.append((rid, t, p))
        timed.append(rows)
    return timed, [p for sh in timed for p in sh]


tokens = st.lists(st.integers(0, 50), min_size=0, max_size=12)
session_st = st.lists(tokens, min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    sessions=st.lists(session_st, min_size=1, max_size=6),
    system=st.lists(st.integers(0, 50), max_size=10),
    n_shards=st.integers(1, 4),
    marker_first=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_union_is_one_cache_over_the_interleaved_order(
    sessions: list[list[Prompt]], system: Prompt, n_shards: int, marker_first: bool, seed: int
) -> None:
    rng = random.Random(seed)
    timed, everything = split(sessions_to_prompts(sessions, marker_first, system), n_shards, rng)
    offsets = [rng.randrange(-(10**6), 10**6) for _ in timed]
    # each shard on its own clock: the offsets move them back onto the common one
    rows = [
        ([TheoryRow(r.request_id, r.sent_ns - off, *_rest(r)) for r in shard_rows(sh)], off)
        for sh, off in zip(timed, offsets, strict=True)
    ]
    union = {r.request_id: r.hit_tokens for r in union_theory(rows, BS)}
    assert union == one_cache(everything)


def _rest(r: TheoryRow) -> tuple[int, int, np.ndarray]:
    return r.prompt_tokens, r.hit_tokens, r.new_blocks


@settings(max_examples=100, deadline=None)
@given(
    sessions=st.lists(session_st, min_size=1, max_size=6),
    system=st.lists(st.integers(0, 50), max_size=10),
    n_shards=st.integers(1, 4),
    seed=st.integers(0, 2**32),
)
def test_disjoint_trees_union_is_the_token_weighted_combination(
    sessions: list[list[Prompt]], system: Prompt, n_shards: int, seed: int
) -> None:
    """A marker in front of everything a tree sends: no block can be shared across trees, so
    every request keeps its shard's own hit and the union's rate is the shards' combined."""
    timed, _ = split(sessions_to_prompts(sessions, True, system), n_shards, random.Random(seed))
    per_shard = [shard_rows(sh) for sh in timed]
    union = list(union_theory([(rows, 0) for rows in per_shard], BS))
    own = {r.request_id: r.hit_tokens for rows in per_shard for r in rows}
    assert {r.request_id: r.hit_tokens for r in union} == own
    hits = sum(r.hit_tokens for rows in per_shard for r in rows)
    prompt = sum(r.prompt_tokens for rows in per_shard for r in rows)
    assert sum(r.hit_tokens for r in union) / max(prompt, 1) == hits / max(prompt, 1)


def test_a_system_prompt_before_the_marker_is_paid_once_not_once_per_shard() -> None:
    """The --salt / first_turn_prefix case: trees share the system prompt. Each shard's own cache
    misses it once; the union misses it once in all, so the combination undercounts by
    (shards - 1) x the system prompt's blocks."""
    system = list(range(100, 132))  # 8 blocks of 4
    sessions = [[[1, 2, 3, 4, 5], [6, 7, 8, 9]] for _ in range(6)]
    timed, everything = split(sessions_to_prompts(sessions, False, system), 3, random.Random(1))
    per_shard = [shard_rows(sh) for sh in timed]
    union = list(union_theory([(rows, 0) for rows in per_shard], BS))
    own = sum(r.hit_tokens for rows in per_shard for r in rows)
    assert sum(r.hit_tokens for r in union) - own == (3 - 1) * len(system)
    assert {r.request_id: r.hit_tokens for r in union} == one_cache(everything)


def test_a_merge_of_merges_is_the_merge_of_all() -> None:
    rng = random.Random(7)
    sessions = [
        [[rng.randrange(40) for _ in range(rng.randrange(1, 15))] for _ in range(3)]
        for _ in range(8)
    ]
    timed, everything = split(sessions_to_prompts(sessions, False, [1, 2, 3, 4, 5]), 4, rng)
    rows = [shard_rows(sh) for sh in timed]
    ab = list(union_theory([(rows[0], 0), (rows[1], 0)], BS))
    cd = list(union_theory([(rows[2], 0), (rows[3], 0)], BS))
    nested = {r.request_id: r.hit_tokens for r in union_theory([(ab, 0), (cd, 0)], BS)}
    assert nested == one_cache(everything)


def test_rows_carry_what_they_added_to_the_shared_cache() -> None:
    a = shard_rows([("a", 1, list(range(16)))])
    b = shard_rows([("b", 2, list(range(16)) + [99] * 8)])
    out = list(union_theory([(a, 0), (b, 0)], BS))
    assert [r.hit_tokens for r in out] == [0, 16]
    assert out[1].new_blocks.size == 2  # only the 2 blocks past the shared 4
    assert out[1].new_blocks.tolist() == block_hashes(list(range(16)) + [99] * 8, BS)[4:].tolist()


def routed_rows(
    prompts: Sequence[tuple[str, int, Prompt]], replica_of: dict[str, int]
) -> list[TheoryRow]:
    """What a routed run writes for one shard (the producer: ``HitRateMeter.row`` with a
    replica)."""
    meter = HitRateMeter(BS)
    return [
        meter.row(rid, sent_ns, block_hashes(toks, BS), len(toks), replica_of[rid])
        for rid, sent_ns, toks in prompts
    ]


def per_replica_cache(
    prompts: Sequence[tuple[str, int, Prompt]], replica_of: dict[str, int]
) -> dict[str, int]:
    """The reference: one unbounded cache per replica, over what was routed there in order."""
    caches: dict[int, UnboundedPrefixCache] = {}
    out = {}
    for rid, _, toks in sorted(prompts, key=lambda p: p[1]):
        cache = caches.setdefault(replica_of[rid], UnboundedPrefixCache(BS))
        out[rid] = cache.observe(block_hashes(toks, BS), len(toks)).hit_tokens
    return out


@settings(max_examples=100, deadline=None)
@given(
    sessions=st.lists(session_st, min_size=1, max_size=6),
    system=st.lists(st.integers(0, 50), max_size=10),
    n_shards=st.integers(1, 3),
    replicas=st.integers(1, 3),
    seed=st.integers(0, 2**32),
)
def test_routed_rows_replay_each_replica_cache_exactly(
    sessions: list[list[Prompt]], system: Prompt, n_shards: int, replicas: int, seed: int
) -> None:
    """Each request's replica hit is what that replica's own unbounded cache served, in one
    run and in the union of shards that routed over the same replicas; the shared hit is
    unchanged by routing, and never below the replica's (the routing loss is >= 0)."""
    rng = random.Random(seed)
    timed, everything = split(sessions_to_prompts(sessions, False, system), n_shards, rng)
    replica_of = {rid: rng.randrange(replicas) for rid, _, _ in everything}
    per_shard = [routed_rows(sh, replica_of) for sh in timed]
    union = list(union_theory([(rows, 0) for rows in per_shard], BS))
    assert {r.request_id: r.replica_hit_tokens for r in union} == per_replica_cache(
        everything, replica_of
    )
    assert {r.request_id: r.hit_tokens for r in union} == one_cache(everything)
    assert all(r.replica == replica_of[r.request_id] for r in union)
    for r in union:
        assert r.replica_hit_tokens is not None and r.replica_hit_tokens <= r.hit_tokens
    if n_shards == 1:  # one run: its own rows are already exact
        own = {r.request_id: r.replica_hit_tokens for r in per_shard[0]}
        assert own == per_replica_cache(everything, replica_of)


def test_one_replica_loses_nothing_and_splitting_a_tree_loses_its_prefix() -> None:
    prompts = [("a", 1, list(range(16))), ("b", 2, list(range(24)))]
    same = routed_rows(prompts, {"a": 0, "b": 0})
    assert [r.replica_hit_tokens for r in same] == [r.hit_tokens for r in same] == [0, 16]
    split_rows = routed_rows(prompts, {"a": 0, "b": 1})
    assert [r.hit_tokens for r in split_rows] == [0, 16]
    assert [r.replica_hit_tokens for r in split_rows] == [0, 0]
