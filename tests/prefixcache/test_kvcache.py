"""The bounded KV block cache: LRU order, pinning, offload tier, vLLM's hit cap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.cache import UnboundedPrefixCache, hittable_blocks
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.kvcache import KVCache
from agentx.prefixcache.kvcache.cache import DistinctIds

BS = 16


def toks(*segments: int, length: int = 2 * BS) -> np.ndarray:
    """Tokens made of ``length``-token segments, each filled with its own id: requests built
    from the same leading segments share a prefix."""
    return np.concatenate([np.full(length, s, dtype=np.int64) for s in segments])


def req(*segments: int, length: int = 2 * BS, tail: int = 1) -> tuple[np.ndarray, int]:
    """Block hashes and prompt length; ``tail`` extra tokens keep every full block hittable."""
    t = np.concatenate([toks(*segments, length=length), np.full(tail, 999, dtype=np.int64)])
    return block_hashes(t, BS), int(t.size)


def test_a_repeated_prompt_hits_all_its_hittable_blocks() -> None:
    cache = KVCache(capacity_tokens=64 * BS, block_size=BS)
    h, n = req(1, 2)  # 4 full blocks + 1 token
    assert cache.observe(h, n) == (0, 0)
    assert cache.observe(h, n) == (4 * BS, 0)
    c = cache.counters
    assert (c.queries_tokens, c.gpu_hit_tokens, c.requests) == (2 * n, 4 * BS, 2)


def test_the_last_token_is_always_computed() -> None:
    cache = KVCache(capacity_tokens=64 * BS, block_size=BS)
    exact = block_hashes(toks(1, 2), BS)  # exactly 4 blocks, no tail: at most 3 can hit
    cache.observe(exact, 4 * BS)
    assert cache.lookup(exact, 4 * BS) == (3 * BS, 0)
    assert cache.lookup(exact, 4 * BS + 1) == (4 * BS, 0)


def test_lookup_has_no_side_effects() -> None:
    cache = KVCache(capacity_tokens=64 * BS, block_size=BS)
    h, n = req(1)
    cache.observe(h, n)
    before = (cache.counters.queries_tokens, cache.resident_blocks)
    for _ in range(3):
        cache.lookup(h, n)
    assert (cache.counters.queries_tokens, cache.resident_blocks) == before


def test_shared_prefix_hits_up_to_the_divergence() -> None:
    cache = KVCache(capacity_tokens=64 * BS, block_size=BS)
    cache.observe(*req(1, 2))
    assert cache.lookup(*req(1, 3)) == (2 * BS, 0)  # segment 1 (2 blocks) shared, then diverges
    assert cache.lookup(*req(4, 2)) == (0, 0)  # chained: same later tokens, different prefix


def test_lru_evicts_least_recently_released_first() -> None:
    cache = KVCache(capacity_tokens=4 * BS, block_size=BS)  # 4 blocks
    a, b, c = req(1, tail=0), req(2, tail=0), req(3, tail=0)  # 2 blocks each, no partial block
    cache.observe(*a)
    cache.observe(*b)
    cache.observe(*c)  # needs 2 blocks: a's go
    assert all(int(x) not in cache for x in a[0])
    assert all(int(x) in cache for x in b[0]) and all(int(x) in cache for x in c[0])
    cache.observe(*b)  # touch b: c is now the oldest
    cache.observe(*a)
    assert all(int(x) not in cache for x in c[0])
    assert all(int(x) in cache for x in b[0])


def test_a_released_request_loses_its_tail_before_its_head() -> None:
    cache = KVCache(capacity_tokens=4 * BS, block_size=BS)
    h, n = req(1, 2, tail=0)  # 4 blocks fill the cache
    cache.observe(h, n)
    cache.observe(*req(7, length=BS, tail=0))  # one new block evicts exactly one
    assert [int(x) in cache for x in h] == [True, True, True, False]


def test_pinned_blocks_are_never_evicted() -> None:
    cache = KVCache(capacity_tokens=4 * BS, block_size=BS)
    a = req(1, 2, tail=0)  # 4 blocks: the whole cache
    alloc = cache.allocate(*a)
    assert cache.usage == 1.0
    assert not cache.can_allocate(*req(3, tail=0))
    other = cache.allocate(*req(3, tail=0))  # over-commits rather than evict pinned blocks
    assert all(int(x) in cache for x in a[0])
    assert cache.resident_blocks == 6
    cache.release(other)
    assert cache.resident_blocks == 4  # back to capacity: the free ones went
    assert all(int(x) in cache for x in a[0])
    cache.release(alloc)
    assert cache.usage == 0.0 and cache.resident_blocks == 4


def test_a_running_request_can_share_blocks_with_a_new_one() -> None:
    cache = KVCache(capacity_tokens=8 * BS, block_size=BS)
    first = cache.allocate(*req(1, 2))
    second = cache.allocate(*req(1, 3))  # shares segment 1 while the first is still running
    assert second.gpu_hit_tokens == 2 * BS
    cache.release(first)
    cache.release(second)
    assert cache.pinned_blocks == 0


def test_output_reservation_counts_in_usage() -> None:
    cache = KVCache(capacity_tokens=10 * BS, block_size=BS)
    h, n = req(1, tail=0)  # 2 blocks
    alloc = cache.allocate(h, n, extra_tokens=3 * BS)
    assert alloc.anonymous_blocks == 3
    assert cache.usage == pytest.approx(0.5)
    cache.release(alloc)
    assert cache.usage == 0.0


def test_offload_tier_receives_evicted_blocks_and_serves_hits() -> None:
    cache = KVCache(capacity_tokens=4 * BS, block_size=BS, offload_tokens=64 * BS)
    a, b = req(1), req(2)
    cache.observe(*a)
    cache.observe(*b)
    cache.observe(*req(3))  # a's blocks leave the GPU ...
    assert all(cache.in_offload(int(x)) for x in a[0][:2])
    assert cache.counters.evicted_blocks >= 2
    gpu, off = cache.observe(*a)  # ... and come back from the offload tier
    assert (gpu, off) == (0, 2 * BS)
    assert cache.counters.offload_hit_tokens == 2 * BS
    assert cache.counters.hit_rate > 0


def test_a_hit_continues_from_gpu_into_offload() -> None:
    cache = KVCache(capacity_tokens=3 * BS, block_size=BS, offload_tokens=64 * BS)
    h, n = req(1, 2, tail=0)  # 4 blocks > 3: over capacity, the tail is evicted on release
    cache.observe(h, n)
    assert [int(x) in cache for x in h] == [True, True, True, False]
    assert cache.lookup(h, n + 1) == (3 * BS, BS)


def test_offload_tier_is_bounded_lru() -> None:
    cache = KVCache(capacity_tokens=2 * BS, block_size=BS, offload_tokens=2 * BS)
    for s in range(1, 5):
        cache.observe(*req(s, tail=0))
    assert cache.offload_blocks == 2
    assert (cache.counters.evicted_blocks, cache.counters.offload_evicted_blocks) == (6, 4)
    assert cache.lookup(*req(1))[1] == 0  # the oldest fell out of both tiers
    assert cache.lookup(*req(3))[1] == 2 * BS


def test_without_offload_evicted_blocks_are_gone() -> None:
    cache = KVCache(capacity_tokens=2 * BS, block_size=BS)
    cache.observe(*req(1))
    cache.observe(*req(2))
    assert cache.lookup(*req(1)) == (0, 0)
    assert cache.counters.offload_queries_tokens == 0


def test_reset_drops_unpinned_blocks() -> None:
    cache = KVCache(capacity_tokens=16 * BS, block_size=BS, offload_tokens=16 * BS)
    cache.observe(*req(1))
    pinned = cache.allocate(*req(2))
    cache.reset()
    assert cache.lookup(*req(1)) == (0, 0)
    assert cache.lookup(*req(2)) == (2 * BS, 0)
    cache.release(pinned)


def test_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        KVCache(capacity_tokens=100, block_size=0)
    with pytest.raises(ValueError):
        KVCache(capacity_tokens=-1)


# -- properties over random prefix-sharing workloads ------------------------------------------

workloads = st.lists(
    st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=5), st.integers(0, 20)),
    min_size=1,
    max_size=30,
)


def _requests(spec: list[tuple[list[int], int]]) -> list[tuple[np.ndarray, int]]:
    out = []
    for segments, tail in spec:
        t = np.concatenate([toks(*segments, length=BS + 3), np.arange(tail, dtype=np.int64) + 500])
        out.append((block_hashes(t, BS), int(t.size)))
    return out


@settings(max_examples=60, deadline=None)
@given(workloads)
def test_a_cache_big_enough_is_the_unbounded_cache(spec: list[tuple[list[int], int]]) -> None:
    reqs = _requests(spec)
    # every block any request takes, the partial last ones too (freed, they stay in the LRU)
    total_blocks = sum(-(-n // BS) for _, n in reqs)
    bounded = KVCache(capacity_tokens=(total_blocks + 1) * BS, block_size=BS)
    unbounded = UnboundedPrefixCache(BS)
    for h, n in reqs:
        assert bounded.observe(h, n)[0] == unbounded.observe(h, n).hit_tokens


@settings(max_examples=60, deadline=None)
@given(workloads, st.integers(1, 12), st.integers(0, 40))
def test_offload_adds_hits_without_changing_the_gpu_tier(
    spec: list[tuple[list[int], int]], gpu_blocks: int, offload_blocks: int
) -> None:
    reqs = _requests(spec)
    gpu_only = KVCache(capacity_tokens=gpu_blocks * BS, block_size=BS)
    tiered = KVCache(gpu_blocks * BS, BS, offload_tokens=offload_blocks * BS)
    for h, n in reqs:
        g1, o1 = gpu_only.observe(h, n)
        g2, o2 = tiered.observe(h, n)
        assert o1 == 0
        assert g1 == g2  # the offload tier is a victim cache: the GPU tier evolves the same
        assert g2 + o2 <= hittable_blocks(n, BS) * BS
        assert gpu_only.resident_blocks <= gpu_only.capacity_blocks
        assert tiered.offload_blocks <= tiered.offload_capacity_blocks
    assert tiered.counters.hit_rate >= gpu_only.counters.hit_rate


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.integers(0, 12), st.integers(1, 3 * BS)), max_size=30
    ),
    st.integers(1, 12),
    st.sampled_from([0, 6]),
)
def test_distinct_ids_are_served_as_the_same_ids_unmarked(
    reqs: list[tuple[int, int, int]], gpu_blocks: int, offload_blocks: int
) -> None:
    plain = KVCache(gpu_blocks * BS, BS, offload_blocks * BS, dense_ids=True)
    marked = KVCache(gpu_blocks * BS, BS, offload_blocks * BS, dense_ids=True)
    for first, blocks, tail in reqs:
        ids = np.arange(first, first + blocks, dtype=np.int64)
        tokens = blocks * BS + tail
        given_ids = DistinctIds(ids, int(ids.max()) if blocks else 0)
        assert plain.can_allocate(ids, tokens, 8) == marked.can_allocate(given_ids, tokens, 8)
        a, b = plain.allocate(ids, tokens, 8), marked.allocate(given_ids, tokens, 8)
        assert (a.gpu_hit_tokens, a.offload_hit_tokens, a.anonymous_blocks) == (
            b.gpu_hit_tokens,
            b.offload_hit_tokens,
            b.anonymous_blocks,
        )
        plain.release(a)
        marked.release(b)
        assert plain.counters == marked.counters
        assert plain.named_among_newest().tolist() == marked.named_among_newest().tolist()
    assert marked._stamp.size == 0  # the repeat test's scratch never sized
