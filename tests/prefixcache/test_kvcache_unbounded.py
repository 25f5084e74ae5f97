"""UnboundedKVCache against a KVCache that never fills: the same random allocations and
releases, every allocation, counter and the final free queue's make-up equal."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.kvcache import KVCache, unbounded
from agentx.prefixcache.kvcache.unbounded import UNBOUNDED_TOKENS, UnboundedKVCache

BS = 4

# a request: a thread (threads 3-4 share thread 0's first blocks), its length in blocks, a
# tail of tokens past the last full block, output tokens reserved, a repeated block or not
requests = st.tuples(
    st.integers(0, 4), st.integers(0, 20), st.integers(0, 2 * BS), st.integers(0, 12), st.booleans()
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("allocate"), requests),
        st.tuples(st.just("release"), st.integers(0, 10)),
    ),
    max_size=80,
)


def ids_of(thread: int, blocks: int, repeat: bool) -> np.ndarray:
    base = 0 if thread >= 3 else thread
    head = [base * 100 + i + 1 for i in range(min(blocks, 3 if thread >= 3 else blocks))]
    out = head + [thread * 100 + 50 + i for i in range(blocks - len(head))]
    if repeat and out:
        out.append(out[0])  # callers naming blocks freely may repeat one
    return np.asarray(out, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(ops, st.sampled_from([0, 2**31 - 60]), st.sampled_from([1, 3, unbounded.RANK_SLICE]))
def test_unbounded_cache_is_a_kvcache_that_never_fills(
    steps: list[tuple[str, object]], first_position: int, rank_slice: int
) -> None:
    ref = KVCache(UNBOUNDED_TOKENS, BS, dense_ids=True)
    fast = UnboundedKVCache(BS)
    # positions past int32 from the first releases on: the stamps widen, the order holds
    fast._tail = first_position
    running: list[tuple[object, object]] = []
    for op, arg in steps:
        if op == "allocate":
            thread, blocks, tail, out, repeat = arg  # type: ignore[misc]
            ids = ids_of(thread, blocks, repeat)
            prompt = blocks * BS + tail
            assert fast.can_allocate(ids, prompt, out) == ref.can_allocate(ids, prompt, out)
            a, b = ref.allocate(ids, prompt, out), fast.allocate(ids, prompt, out)
            assert (a.gpu_hit_tokens, a.offload_hit_tokens, a.anonymous_blocks, a.repeats) == (
                b.gpu_hit_tokens,
                b.offload_hit_tokens,
                b.anonymous_blocks,
                b.repeats,
            )
            running.append((a, b))
        elif running:
            a, b = running.pop(int(arg) % len(running))  # type: ignore[call-overload]
            ref.release(a)  # type: ignore[arg-type]
            fast.release(b)  # type: ignore[arg-type]
        assert fast.counters == ref.counters
        assert (fast.named_blocks, fast.pinned_blocks, fast.resident_blocks) == (
            ref.named_blocks,
            ref.pinned_blocks,
            ref.resident_blocks,
        )
    for a, b in running:
        ref.release(a)  # type: ignore[arg-type]
        fast.release(b)  # type: ignore[arg-type]
    with mock.patch.object(unbounded, "RANK_SLICE", rank_slice):  # ranked a slice at a time
        assert fast.named_among_newest().tolist() == ref.named_among_newest().tolist()
    # its last use (the cache's state spent on it) answers the same
    assert fast.named_among_newest(last=True).tolist() == ref.named_among_newest().tolist()
