"""ReachCache's capacity bound against KVCache runs of every capacity on the same timeline:
from the bound on, no run refills a block or fails a can_allocate."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.kvcache import Allocation, KVCache
from agentx.prefixcache.kvcache.unbounded import UnboundedKVCache
from agentx.simulate.reach import ReachCache

BS = 4

requests = st.tuples(
    st.integers(0, 4), st.integers(0, 16), st.integers(0, 2 * BS), st.integers(0, 9)
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("allocate"), requests),
        st.tuples(st.just("release"), st.integers(0, 10)),
    ),
    max_size=70,
)


def ids_of(thread: int, blocks: int) -> np.ndarray:
    base = 0 if thread >= 3 else thread
    head = [base * 100 + i + 1 for i in range(min(blocks, 3 if thread >= 3 else blocks))]
    return np.asarray(
        head + [thread * 100 + 50 + i for i in range(blocks - len(head))], dtype=np.int64
    )


def replay(cache: KVCache, steps: list[tuple[str, object]]) -> bool:
    """Feed the steps; whether every can_allocate asked (another request running) said yes."""
    running: list[Allocation] = []
    fits = True
    for op, arg in steps:
        if op == "allocate":
            thread, blocks, tail, out = arg  # type: ignore[misc]
            ids, prompt = ids_of(thread, blocks), blocks * BS + tail
            if running:
                fits &= cache.can_allocate(ids, prompt, out)
            running.append(cache.allocate(ids, prompt, out))
        elif running:
            cache.release(running.pop(int(arg) % len(running)))  # type: ignore[call-overload]
    return fits


@settings(max_examples=200, deadline=None)
@given(ops)
def test_from_the_bound_on_no_capacity_refills_or_waits(steps: list[tuple[str, object]]) -> None:
    reach = ReachCache(BS)
    replay(reach, steps)
    plain = UnboundedKVCache(BS)
    replay(plain, steps)
    assert reach.counters == plain.counters  # the bound changes nothing it answers
    bound = reach.exact_from_blocks
    for blocks in range(bound, bound + 3):
        cache = KVCache(blocks * BS, BS, dense_ids=True)
        assert replay(cache, steps), blocks
        assert cache.counters.refilled_blocks == 0, blocks
        assert cache.counters.gpu_hit_tokens == plain.counters.gpu_hit_tokens
