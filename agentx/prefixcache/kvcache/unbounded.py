"""A :class:`~agentx.prefixcache.kvcache.cache.KVCache` that never evicts, named by dense ids:
the same allocations, counters and final free queue, without the queue.

A cache that never evicts needs no LRU order while it runs: nothing is ever taken from the
front. What is left of the order is read once at the end (:meth:`named_among_newest`), and it
follows from when each entry was freed last. So a release stamps its freed blocks with the
next positions of the free queue (unnamed entries first, then the request's tail first, as
``KVCache.release`` pushes them) and a re-pin leaves the stamp to be overwritten by the next
release: no queue array to fill, compact and scan (the unbounded pass of ``agentx simulate``
frees ~94M entries on a 6e9-token corpus, and its queue was most of that pass's time and
peak memory).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.kvcache.cache import (
    NEVER,
    Allocation,
    Counts,
    DistinctIds,
    Hashes,
    KVCache,
    grown_size,
    leading_run,
)
from agentx.prefixcache.kvcache.queue import Ids

UNBOUNDED_TOKENS = 1 << 60
RANK_SLICE = 1 << 20  # named blocks ranked at once by named_among_newest
INT32_MAX = int(np.iinfo(np.int32).max)


class UnboundedKVCache(KVCache):
    """``KVCache(UNBOUNDED_TOKENS, block_size, dense_ids=True)``, observably: the same
    :class:`Allocation` for every request, the same counters (nothing is evicted or refilled),
    pinned and named blocks, and :meth:`named_among_newest`. No offload tier (a cache that
    never evicts offers it nothing)."""

    def __init__(self, block_size: int) -> None:
        super().__init__(UNBOUNDED_TOKENS, block_size, dense_ids=True)
        # last free-queue position: int32 until the positions outgrow it (4 bytes a block)
        self._freed_at: Counts = np.full(1, -1, dtype=np.int32)
        self._tail = 0  # the next free-queue position
        self._unnamed_runs: list[tuple[int, int]] = []  # (first position, count)

    def _grow(self, largest_id: int, *, exact: bool = False) -> None:
        n = largest_id + 1
        if n <= self._ref.size:
            return
        size = n if exact else grown_size(self._ref.size, n)
        for name, fill in (("_ref", NEVER), ("_freed_at", -1)):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=old.dtype)
            new[: old.size] = old
            setattr(self, name, new)

    def can_allocate(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> bool:
        # every block newly pinned is the most it could take
        n = int(hashes.ids.size if isinstance(hashes, DistinctIds) else np.size(hashes))
        anon = self._anonymous_for(n, prompt_tokens, extra_tokens)
        if self.pinned_blocks + n + anon <= self.capacity_blocks:
            return True
        return super().can_allocate(hashes, prompt_tokens, extra_tokens)

    def allocate(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> Allocation:
        ids = self._dense(hashes)
        repeats = self._repeats(hashes, ids)
        ref = self._ref
        rc = ref[ids]  # read once: the hits, the re-pins and the new refcounts
        free = rc == 0
        self._pinning(ids, free, repeats)
        resident = rc >= 0
        bs = self.block_size
        limit = min(hittable_blocks(prompt_tokens, bs), int(ids.size))
        g = leading_run(resident[:limit])
        c = self.counters
        c.requests += 1
        c.queries_tokens += prompt_tokens
        c.gpu_hit_tokens += g * bs
        if not repeats:
            self._named_free -= int(np.count_nonzero(free))  # re-pinned; stamps stay stale
            missing = int(ids.size) - int(np.count_nonzero(resident))
            rc += 1  # a resident block gains a pin, a new one has its first
            ref[ids] = np.maximum(rc, 1, out=rc)
        else:
            distinct, counts = np.unique(ids, return_counts=True)
            rc = ref[distinct]
            resident = rc >= 0
            self._named_free -= int(np.count_nonzero(rc == 0))
            missing = int(np.count_nonzero(~resident))
            ref[distinct[resident]] += counts[resident]
            ref[distinct[~resident]] = counts[~resident]
        anon = self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)
        self._named += missing
        self._anonymous += anon
        return Allocation(ids, anon, prompt_tokens, g * bs, 0, repeats)

    def _pinning(self, ids: Ids, free: npt.NDArray[np.bool_], repeats: bool) -> None:
        """Called as a request is allocated, before anything changes (``free``: which of its
        blocks are free, cached and unpinned; ``repeats``: whether an id occurs twice): for
        subclasses."""

    def release(self, allocation: Allocation) -> None:
        self._release(allocation)

    def _release(self, allocation: Allocation) -> Ids:
        """Release; the named blocks freed, in the order they joined the free queue."""
        anon = allocation.anonymous_blocks
        self._anonymous -= anon
        self._unnamed_free += anon
        if anon:
            self._unnamed_runs.append((self._tail, anon))
            self._tail += anon
        ids = allocation.ids
        ref = self._ref
        if not allocation.repeats:
            tail_first = ids[::-1]
            left = ref[tail_first]
            left -= 1
            ref[tail_first] = left
            freed: Ids = tail_first[left == 0]
        else:  # as KVCache.release: a repeated block is freed where it first occurs
            distinct, first, counts = np.unique(ids, return_index=True, return_counts=True)
            ref[distinct] -= counts
            now_free = ref[distinct] == 0
            freed = distinct[now_free][np.argsort(-first[now_free], kind="stable")]
        n = int(freed.size)
        if self._freed_at.itemsize == 4 and self._tail + n >= INT32_MAX:
            self._freed_at = self._freed_at.astype(np.int64)
        self._freed_at[freed] = np.arange(self._tail, self._tail + n)
        self._tail += n
        self._named_free += n
        return freed

    def named_among_newest(self, *, last: bool = False) -> Counts:
        # each named entry's rank, newest first: the named entries freed after it plus the
        # unnamed ones (never removed: their runs are in order); no merged copy of the queue.
        # int32 when the positions fit: this is the unbounded pass's last peak, and is kept.
        total = self._named_free + sum(k for _, k in self._unnamed_runs)
        small = max(self._tail, total + 1) < INT32_MAX
        dtype = np.int32 if small else np.int64
        free = self._ref == 0
        stamps = self._freed_at
        if last and stamps.dtype == dtype:
            # the cache's last use: its stamps are sorted in place, its refcounts dropped
            # first (two per-id arrays fewer under this peak)
            self._ref = self._freed_at = np.zeros(0, dtype=np.int32)
            count = int(np.count_nonzero(free))
            np.logical_not(free, out=free)
            stamps[free] = -1  # not free: before every stamp
            del free
            stamps.sort()
            named = stamps[stamps.size - count :][::-1]  # newest first
        else:
            named = stamps[free].astype(dtype, copy=False)
            del free
            named[::-1].sort()  # newest first
        del stamps
        unnamed = np.concatenate(
            [np.arange(a, a + k, dtype=dtype) for a, k in self._unnamed_runs] or [named[:0]]
        )
        assert total == int(named.size + unnamed.size)
        # ranked and marked a slice at a time: whole, the search's answer and the index it
        # becomes are 8 bytes a named block each (this is the unbounded pass's peak at 4x)
        is_named = np.zeros(total, dtype=bool)
        for at in range(0, int(named.size), RANK_SLICE):
            part = named[at : at + RANK_SLICE]
            rank = np.searchsorted(unnamed, part, side="right")
            np.subtract(unnamed.size, rank, out=rank)  # unnamed entries newer than each
            rank += np.arange(at, at + part.size, dtype=rank.dtype)
            is_named[rank] = True
        del named, unnamed
        out: Counts = np.zeros(total + 1, dtype=dtype)
        np.cumsum(is_named, out=out[1:])
        return out

    def reset(self) -> None:
        raise NotImplementedError("an unbounded cache is not reset")
