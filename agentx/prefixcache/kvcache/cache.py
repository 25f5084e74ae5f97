"""The KV cache's state as arrays indexed by block id (:mod:`.table`), its two LRU orders as
:class:`~agentx.prefixcache.kvcache.queue.PositionQueue`: a request is a few dozen numpy calls, whatever
its length. The rules are the package's (:mod:`agentx.prefixcache.kvcache`);
``scripts/kvcache_reference.py`` states them one block at a time with dictionaries, and a
property test (``tests/prefixcache/test_kvcache_equivalence.py``) holds the two equal operation
by operation.

Per block id: ``ref`` (the GPU refcount, -1 when evicted, -2 when never cached), ``free_pos`` (its entry in the
free queue, -1 while pinned or absent), ``offload_pos`` (its entry in the offload tier's LRU,
-1 when not offloaded). Id 0 is never a block: it reads as absent everywhere.

Ids come from the cache's own :class:`~agentx.prefixcache.kvcache.table.BlockTable` (blocks
named by hash), or, with ``dense_ids``, from the caller: a driver that renumbered its requests'
blocks once (``agentx simulate``, whose every pass replays the same prompts) names them by id
and no pass looks a hash up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE
from agentx.prefixcache.kvcache.queue import (
    UNNAMED,
    Ids,
    PositionQueue,
    Positions,
    new_positions,
)
from agentx.prefixcache.kvcache.table import BlockTable, Keys

Hashes = npt.ArrayLike  # a request's full-block hashes: a uint64 array or a list of ints,
# or (dense ids) a DistinctIds
Small = npt.NDArray[np.int32]  # per-block counts (refcounts, indices within a request)
Counts = npt.NDArray[np.signedinteger[Any]]  # int32 where the counts fit, else int64
EVICTED = -1  # ref of a block cached once, not now
NEVER = -2  # ref of an id never cached: its first allocation is no refill


def grown_size(size: int, needed: int) -> int:
    """A per-block array's next size: a quarter more (ids arrive a request at a time, and
    doubling left up to half of every array unused, three arrays of ~14M entries at 4x)."""
    return max(needed, size + size // 4 + 1)


@dataclass(frozen=True, slots=True, eq=False)
class DistinctIds:
    """A request's dense block ids that its caller knows are distinct, with the largest of them
    (a caller that keeps ids as runs of consecutive ids knows both without a scan): a cache with
    ``dense_ids`` then runs neither its repeat test nor a ``max`` over the request."""

    ids: Ids
    top: int  # the largest id (0 when there is none)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Ids:
        return self.ids if dtype is None else self.ids.astype(dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Allocation:
    """What :meth:`KVCache.allocate` pinned for one request; hand it back to ``release``."""

    ids: Ids  # the request's full blocks (as the cache's ids), all pinned
    anonymous_blocks: int  # partial prompt block + reserved output blocks, pinned, unnamed
    prompt_tokens: int
    gpu_hit_tokens: int
    offload_hit_tokens: int
    repeats: bool = False  # a block occurs twice in the request (released with counts)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens not computed: GPU hits plus offloaded hits."""
        return self.gpu_hit_tokens + self.offload_hit_tokens

    @property
    def computed_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens


@dataclass(slots=True)
class CacheCounters:
    """Cumulative token counters, named after the vLLM metrics they feed."""

    queries_tokens: int = 0  # vllm:prefix_cache_queries (prompt tokens looked up)
    gpu_hit_tokens: int = 0  # vllm:prefix_cache_hits / source="local_cache_hit"
    offload_queries_tokens: int = 0  # vllm:external_prefix_cache_queries
    offload_hit_tokens: int = 0  # source="external_kv_transfer"
    evicted_blocks: int = 0  # GPU evictions (each one offered to the offload tier)
    offload_evicted_blocks: int = 0  # dropped from the offload tier
    refilled_blocks: int = 0  # computed and cached again after an eviction (or a reset)
    requests: int = 0

    @property
    def hit_rate(self) -> float:
        """(GPU + offload) hit tokens over queried tokens; 0.0 before any query."""
        if not self.queries_tokens:
            return 0.0
        return (self.gpu_hit_tokens + self.offload_hit_tokens) / self.queries_tokens


class KVCache:
    """GPU block cache (LRU over unpinned blocks) with an optional offload (DRAM) tier."""

    def __init__(
        self,
        capacity_tokens: int,
        block_size: int = DEFAULT_BLOCK_SIZE,
        offload_tokens: int = 0,
        *,
        dense_ids: bool = False,
    ) -> None:
        """``dense_ids``: blocks are named by ids ``1, 2, ...`` the caller assigned (one per
        distinct block, as :class:`~agentx.prefixcache.kvcache.table.BlockTable` would), not by
        hashes; the arrays grow to the largest id seen."""
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        if capacity_tokens < 0 or offload_tokens < 0:
            raise ValueError("capacities must be >= 0")
        self.block_size = block_size
        self.capacity_blocks = capacity_tokens // block_size
        self.offload_capacity_blocks = offload_tokens // block_size
        self.counters = CacheCounters()
        self._table = None if dense_ids else BlockTable()
        self._ref: Small = np.full(1, EVICTED, dtype=np.int32)  # id 0: never a block
        self._free_pos: Positions = new_positions(1)  # int32 until the positions outgrow it
        self._offload_pos: Positions = new_positions(1)
        # scratch of _has_repeats, sized when first used (callers naming blocks by DistinctIds
        # never use it: 4 bytes a block less)
        self._stamp: Small = np.zeros(0, dtype=np.int32)
        self._free = PositionQueue()  # refcount-0 blocks and freed unnamed blocks, LRU first
        self._offload = PositionQueue()
        self._named = 0  # resident blocks with a hash (pinned or free)
        self._named_free = 0
        self._unnamed_free = 0  # freed unnamed blocks still taking room
        self._anonymous = 0  # pinned blocks without a name (partial/output blocks)
        self._offloaded = 0

    # -- state -----------------------------------------------------------------------------

    @property
    def resident_blocks(self) -> int:
        return self._named + self._unnamed_free + self._anonymous

    @property
    def pinned_blocks(self) -> int:
        return self._named - self._named_free + self._anonymous

    @property
    def usage(self) -> float:
        """Pinned fraction of the GPU tier (vLLM's ``kv_cache_usage_perc``), capped at 1."""
        if self.capacity_blocks == 0:
            return 1.0 if self.pinned_blocks else 0.0
        return min(1.0, self.pinned_blocks / self.capacity_blocks)

    @property
    def offload_blocks(self) -> int:
        return self._offloaded

    @property
    def named_blocks(self) -> int:
        """Resident blocks cached under a hash."""
        return self._named

    def __contains__(self, block: int) -> bool:
        """Whether ``block`` is resident in the GPU tier."""
        return bool(self._ref[self._find([block])][0] >= 0)

    def in_offload(self, block: int) -> bool:
        if not self.offload_capacity_blocks:
            return False
        return bool(self._offload_pos[self._find([block])][0] >= 0)

    # -- lookups ---------------------------------------------------------------------------

    def _find(self, hashes: Hashes) -> Ids:
        if self._table is None:
            return self._dense(hashes)
        return self._table.find(_keys(hashes))

    def _intern(self, hashes: Hashes) -> Ids:
        if self._table is None:
            return self._dense(hashes)
        ids = self._table.intern(_keys(hashes))
        self._grow(self._table.size)
        return ids

    def _dense(self, ids: Hashes) -> Ids:
        if isinstance(ids, DistinctIds):
            self._grow(ids.top)
            return ids.ids
        out: Ids = np.asarray(ids, dtype=np.int64)
        if out.size:
            self._grow(int(out.max()))
        return out

    def _hits(self, ids: Ids, prompt_tokens: int) -> tuple[int, int]:
        limit = min(hittable_blocks(prompt_tokens, self.block_size), int(ids.size))
        g = leading_run(self._ref[ids[:limit]] >= 0)
        o = 0
        if self.offload_capacity_blocks:
            o = leading_run(self._offload_pos[ids[g:limit]] >= 0)
        return g, o

    def lookup(self, hashes: Hashes, prompt_tokens: int) -> tuple[int, int]:
        """``(gpu_hit_tokens, offload_hit_tokens)`` a request would get now. No side effects."""
        g, o = self._hits(self._find(hashes), prompt_tokens)
        return g * self.block_size, o * self.block_size

    def blocks_needed(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> int:
        """GPU blocks :meth:`allocate` would have to take from the free pool."""
        ids = self._find(hashes)
        new = int(np.count_nonzero(self._ref[ids] < 0))
        return new + self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)

    def can_allocate(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> bool:
        """Whether the request fits without over-commit: free + evictable blocks suffice.

        Resident blocks the request would re-pin cost nothing but also stop being evictable,
        so the test is ``pinned_after <= capacity``."""
        ids = self._find(hashes)
        newly_pinned = int(np.count_nonzero(self._ref[ids] <= 0))
        anon = self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)
        return self.pinned_blocks + newly_pinned + anon <= self.capacity_blocks

    def _anonymous_for(self, n_full: int, prompt_tokens: int, extra_tokens: int) -> int:
        total = -(-(prompt_tokens + max(0, extra_tokens)) // self.block_size)
        return max(0, total - n_full)

    # -- allocation ------------------------------------------------------------------------

    def reserve(self, largest_id: int) -> None:
        """Size the per-block arrays for ids up to ``largest_id`` at once (a caller that knows
        how many distinct blocks are coming: no growing, no slack)."""
        self._grow(largest_id, exact=True)

    def _grow(self, largest_id: int, *, exact: bool = False) -> None:
        n = largest_id + 1
        if n <= self._ref.size:
            return
        size = n if exact else grown_size(self._ref.size, n)
        names = ["_ref", "_free_pos"]
        if self.offload_capacity_blocks:  # without a tier, its array stays one slot
            names.append("_offload_pos")
        for name in names:
            old = getattr(self, name)
            new = np.full(size, NEVER if name == "_ref" else -1, dtype=old.dtype)
            new[: old.size] = old
            setattr(self, name, new)

    def _make_room(self, blocks: int) -> None:
        """Evict least recently freed blocks until ``blocks`` more fit (or none is left)."""
        k = min(self.resident_blocks + blocks - self.capacity_blocks, self._free_entries)
        if k <= 0:
            return
        victims = self._free.take(k, self._free_pos)
        named = victims[victims != UNNAMED]
        self._unnamed_free -= int(victims.size - named.size)
        self._ref[named] = EVICTED
        self._free_pos[named] = -1
        self._named -= int(named.size)
        self._named_free -= int(named.size)
        self.counters.evicted_blocks += int(named.size)
        self._offer(named)

    def _repeats(self, hashes: Hashes, ids: Ids) -> bool:
        """Whether the request names a block twice (never, for :class:`DistinctIds`)."""
        return not isinstance(hashes, DistinctIds) and self._has_repeats(ids)

    def _has_repeats(self, ids: Ids) -> bool:
        """Whether an id occurs twice (chained hashes never repeat; arbitrary callers may):
        each occurrence writes its index, and a repeated id keeps only its last one."""
        if self._stamp.size < self._ref.size:  # every cell read is written first: no fill
            self._stamp = np.empty(self._ref.size, dtype=np.int32)
        order = np.arange(ids.size, dtype=np.int32)
        self._stamp[ids] = order
        return not bool((self._stamp[ids] == order).all())

    @property
    def _free_entries(self) -> int:
        return self._named_free + self._unnamed_free

    def _offer(self, ids: Ids) -> None:
        """GPU victims enter the offload tier (a victim cache), oldest first."""
        if self.offload_capacity_blocks <= 0 or not ids.size:
            return
        self._offloaded += int(np.count_nonzero(self._offload_pos[ids] < 0))
        self._offload_pos = self._offload.push_named(ids, self._offload_pos)
        over = self._offloaded - self.offload_capacity_blocks
        if over > 0:
            dropped = self._offload.take(over, self._offload_pos)
            self._offload_pos[dropped] = -1
            self._offloaded -= over
            self.counters.offload_evicted_blocks += over

    def allocate(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> Allocation:
        """Look a request up, count it, and pin all its blocks for the duration of the request.

        Hit blocks are re-pinned, offloaded hits are loaded back into the GPU tier, and the
        rest are computed and cached under their hashes. ``extra_tokens`` reserves anonymous
        blocks for the output (and the partial last block) so usage reflects decode too."""
        ids = self._intern(hashes)
        repeats = self._repeats(hashes, ids)
        if not repeats:
            return self._allocate_distinct(ids, prompt_tokens, extra_tokens)
        bs = self.block_size
        g, o = self._hits(ids, prompt_tokens)
        c = self.counters
        c.requests += 1
        c.queries_tokens += prompt_tokens
        c.gpu_hit_tokens += g * bs
        if self.offload_capacity_blocks:
            c.offload_queries_tokens += prompt_tokens - g * bs
            c.offload_hit_tokens += o * bs
        if o:  # loaded blocks stay in the offload tier, refreshed
            self._offload_pos = self._offload.push(ids[g : g + o], self._offload_pos)

        distinct, counts = np.unique(ids, return_counts=True)
        ref = self._ref
        rc = ref[distinct]
        resident = rc >= 0
        freed = distinct[rc == 0]  # re-pinned: out of the free queue
        self._free_pos[freed] = -1
        self._named_free -= int(freed.size)
        missing = distinct[~resident]
        c.refilled_blocks += int(np.count_nonzero(rc[~resident] == EVICTED))
        ref[distinct[resident]] += counts[resident]
        anon = self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)
        self._make_room(int(missing.size) + anon)  # what is pinned above cannot be a victim
        ref[missing] = counts[~resident]
        self._named += int(missing.size)
        self._anonymous += anon
        return Allocation(ids, anon, prompt_tokens, g * bs, o * bs, repeats)

    def _allocate_distinct(self, ids: Ids, prompt_tokens: int, extra_tokens: int) -> Allocation:
        """:meth:`allocate` of a request naming no block twice: the refcounts read once, for
        the hits too, and written at once (the victims of the room made are free blocks, none
        of the request's: those it re-pins leave the free queue first)."""
        bs = self.block_size
        ref = self._ref
        rc = ref[ids]
        resident = rc >= 0
        limit = min(hittable_blocks(prompt_tokens, bs), int(ids.size))
        g = leading_run(resident[:limit])
        o = 0
        c = self.counters
        c.requests += 1
        c.queries_tokens += prompt_tokens
        c.gpu_hit_tokens += g * bs
        if self.offload_capacity_blocks:
            o = leading_run(self._offload_pos[ids[g:limit]] >= 0)
            c.offload_queries_tokens += prompt_tokens - g * bs
            c.offload_hit_tokens += o * bs
        if o:  # loaded blocks stay in the offload tier, refreshed
            self._offload_pos = self._offload.push_named(ids[g : g + o], self._offload_pos)
        freed = ids[rc == 0]  # re-pinned: out of the free queue
        self._free_pos[freed] = -1
        self._named_free -= int(freed.size)
        missing = int(ids.size) - int(np.count_nonzero(resident))
        c.refilled_blocks += int(np.count_nonzero(rc == EVICTED))
        rc += 1  # a resident block gains a pin; one never or no longer cached has its first
        ref[ids] = np.maximum(rc, 1, out=rc)
        anon = self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)
        self._make_room(missing + anon)
        self._named += missing
        self._anonymous += anon
        return Allocation(ids, anon, prompt_tokens, g * bs, o * bs, False)

    def release(self, allocation: Allocation) -> None:
        """Unpin a request's blocks. Its unnamed blocks, then its tail, then its head become
        evictable, in that order."""
        anon = allocation.anonymous_blocks
        self._anonymous -= anon
        self._unnamed_free += anon
        ids = allocation.ids
        ref = self._ref
        if not allocation.repeats:
            tail_first = ids[::-1]
            left = ref[tail_first]
            left -= 1
            ref[tail_first] = left
            freed = tail_first[left == 0]
        else:  # a repeated block is freed where its first occurrence is, tail first
            distinct, first, counts = np.unique(ids, return_index=True, return_counts=True)
            ref[distinct] -= counts
            now_free = ref[distinct] == 0
            freed = distinct[now_free][np.argsort(-first[now_free], kind="stable")]
        self._named_free += int(freed.size)
        # the unnamed blocks first, then the named ones (tail first), in one push
        self._free_pos = self._free.push_named(freed, self._free_pos, anon)
        if self.resident_blocks > self.capacity_blocks:  # over-committed: shrink back
            self._make_room(0)

    def named_among_newest(self, *, last: bool = False) -> Counts:
        """``out[k]``: how many of the ``k`` most recently freed entries of the free queue are
        named blocks (``k`` = 0 .. all free entries). What a smaller cache that saw the same
        events without refilling anything would still hold, when it holds ``k`` blocks.
        ``last``: the cache is not used after this (a subclass may spend its state on it)."""
        newest_first = self._free.live(self._free_pos)[::-1]
        out = np.zeros(newest_first.size + 1, dtype=np.int64)
        np.cumsum(newest_first != UNNAMED, out=out[1:])
        return out

    def observe(self, hashes: Hashes, prompt_tokens: int) -> tuple[int, int]:
        """Allocate and release at once (a request in isolation, e.g. offline simulation)."""
        alloc = self.allocate(hashes, prompt_tokens)
        self.release(alloc)
        return alloc.gpu_hit_tokens, alloc.offload_hit_tokens

    def reset(self) -> None:
        """Drop every unpinned block from both tiers (vLLM's ``/reset_prefix_cache``)."""
        free = np.flatnonzero(self._ref == 0)
        self._ref[free] = EVICTED
        self._free_pos[free] = -1
        self._named -= int(free.size)
        self._named_free = self._unnamed_free = 0
        self._free.clear()
        self._offload_pos[:] = -1
        self._offloaded = 0
        self._offload.clear()


def leading_run(present: npt.NDArray[np.bool_]) -> int:
    """The length of the leading run of True."""
    if not present.size:
        return 0
    first = int(present.argmin())  # the first False, or 0 when all are True
    return int(present.size) if present[first] else first


def _keys(hashes: Hashes) -> Keys:
    """A request's hashes as uint64 (negative ints, from callers naming blocks freely, wrap)."""
    if isinstance(hashes, np.ndarray) and hashes.dtype == np.uint64:
        return hashes
    arr = np.asarray(hashes)
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype == np.uint64:
        return arr
    return arr.astype(np.int64).view(np.uint64)
