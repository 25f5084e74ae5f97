"""The array KVCache against the block-at-a-time reference (scripts/kvcache_reference.py): the
same random operations, every answer and every counter equal, after every step."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from kvcache_reference import ReferenceKVCache

from agentx.prefixcache.kvcache import KVCache

BS = 4

# a request: a chain (one of a few threads, so requests share prefixes), a length in blocks, a
# tail of tokens past the last full block, output tokens; now and then a repeated block
requests = st.tuples(
    st.integers(0, 5), st.integers(0, 24), st.integers(0, 2 * BS), st.integers(0, 12)
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("allocate"), requests),
        st.tuples(st.just("release"), st.integers(0, 10)),
        st.tuples(st.just("lookup"), requests),
        st.tuples(st.just("repeat"), requests),
        st.tuples(st.just("reset"), st.none()),
    ),
    max_size=60,
)


def chain(thread: int, blocks: int) -> list[int]:
    """Thread ``thread``'s first ``blocks`` block hashes; threads 4-5 branch off thread 0."""
    base = 0 if thread >= 4 else thread
    shared = 3 if thread >= 4 else blocks
    head = [base * 1000 + i + 1 for i in range(min(blocks, shared))]
    return head + [thread * 1000 + 500 + i for i in range(blocks - len(head))]


def state(c: KVCache | ReferenceKVCache, universe: list[int]) -> tuple[object, ...]:
    return (
        c.resident_blocks,
        c.pinned_blocks,
        c.usage,
        c.offload_blocks,
        c.named_blocks,
        c.counters,
        [b in c for b in universe],
        [c.in_offload(b) for b in universe],
        list(c.named_among_newest()),
    )


@settings(max_examples=300, deadline=None)
@given(
    ops,
    st.integers(0, 40),  # GPU capacity, blocks
    st.sampled_from([0, 3, 12, 60]),  # offload capacity, blocks
)
def test_the_array_cache_answers_as_the_reference(
    steps: list[tuple[str, object]], gpu: int, offload: int
) -> None:
    new, ref = KVCache(gpu * BS, BS, offload * BS), ReferenceKVCache(gpu * BS, BS, offload * BS)
    running: list[tuple[object, object]] = []
    universe = sorted({b for t in range(6) for b in chain(t, 24)})
    for op, arg in steps:
        if op == "release":
            if running:
                a, b = running.pop(int(arg) % len(running))  # type: ignore[call-overload]
                new.release(a)  # type: ignore[arg-type]
                ref.release(b)  # type: ignore[arg-type]
        elif op == "reset":
            new.reset()
            ref.reset()
        else:
            thread, n, tail, out = arg  # type: ignore[misc]
            hashes = chain(thread, n)
            if op == "repeat" and hashes:
                hashes = [*hashes, hashes[0]]
            tokens = len(hashes) * BS + tail
            assert new.lookup(hashes, tokens) == ref.lookup(hashes, tokens)
            assert new.blocks_needed(hashes, tokens, out) == ref.blocks_needed(hashes, tokens, out)
            assert new.can_allocate(hashes, tokens, out) == ref.can_allocate(hashes, tokens, out)
            if op != "lookup":
                a = new.allocate(np.array(hashes, dtype=np.uint64), tokens, out)
                b = ref.allocate(hashes, tokens, out)
                assert (a.gpu_hit_tokens, a.offload_hit_tokens, a.anonymous_blocks) == (
                    b.gpu_hit_tokens,
                    b.offload_hit_tokens,
                    b.anonymous_blocks,
                )
                running.append((a, b))
        assert state(new, universe) == state(ref, universe), op
    for a, b in running:
        new.release(a)  # type: ignore[arg-type]
        ref.release(b)  # type: ignore[arg-type]
    assert state(new, universe) == state(ref, universe)


def test_a_long_run_stays_equal_and_compacts_its_queues() -> None:
    """Thousands of growing turns over a small cache: the queues wrap and compact many times."""
    rng = np.random.default_rng(7)
    new, ref = KVCache(300 * BS, BS, 500 * BS), ReferenceKVCache(300 * BS, BS, 500 * BS)
    lengths = [0] * 12
    live: list[tuple[object, object]] = []
    for _ in range(3000):
        t = int(rng.integers(12))
        lengths[t] = lengths[t] + int(rng.integers(1, 6)) if lengths[t] < 150 else 5
        hashes = [t * 100_000 + lengths[t] // 150 * 10_000 + i for i in range(lengths[t])]
        tokens = len(hashes) * BS + 1
        a, b = new.allocate(hashes, tokens, 8), ref.allocate(hashes, tokens, 8)
        assert (a.gpu_hit_tokens, a.offload_hit_tokens) == (b.gpu_hit_tokens, b.offload_hit_tokens)
        live.append((a, b))
        if len(live) > 3:
            x, y = live.pop(int(rng.integers(len(live))))
            new.release(x)  # type: ignore[arg-type]
            ref.release(y)  # type: ignore[arg-type]
    assert new.counters == ref.counters
    assert new.counters.evicted_blocks > 1000 and new.counters.offload_evicted_blocks > 100
