"""The reference model of :mod:`agentx.prefixcache.kvcache`: the same rules, one block at a time, with a
dict of refcounts and an ``OrderedDict`` free queue (the implementation agentx shipped before
its state moved into arrays). ``tests/prefixcache/test_kvcache_equivalence.py`` drives both with
the same operations and compares every answer and counter; ``scripts/bench_kvcache.py`` times
both."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Container
from dataclasses import dataclass, field
from itertools import islice, takewhile

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE
from agentx.prefixcache.kvcache import CacheCounters


@dataclass(frozen=True, slots=True, eq=False)
class Allocation:
    """What :meth:`ReferenceKVCache.allocate` pinned for one request; hand it back to ``release``."""

    blocks: tuple[int, ...]  # the request's full-block hashes, all pinned
    anonymous_blocks: int  # partial prompt block + reserved output blocks, pinned, unnamed
    prompt_tokens: int
    gpu_hit_tokens: int
    offload_hit_tokens: int

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens not computed: GPU hits plus offloaded hits."""
        return self.gpu_hit_tokens + self.offload_hit_tokens

    @property
    def computed_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens


@dataclass(slots=True)
class _Tier:
    """An LRU set of block hashes (the offload tier)."""

    capacity_blocks: int
    lru: OrderedDict[int, None] = field(default_factory=OrderedDict)

    def put_all(self, blocks: list[int]) -> int:
        """Insert or refresh ``blocks`` (one step's GPU victims, oldest first), then drop the
        oldest down to capacity; returns how many fell out. A block refreshed in the same step
        is not counted as dropped and re-inserted."""
        if self.capacity_blocks <= 0:
            return 0
        lru = self.lru
        for block in blocks:
            if block in lru:
                lru.move_to_end(block)
            else:
                lru[block] = None
        dropped = 0
        while len(lru) > self.capacity_blocks:
            lru.popitem(last=False)
            dropped += 1
        return dropped


class ReferenceKVCache:
    """GPU block cache (LRU over unpinned blocks) with an optional offload (DRAM) tier."""

    def __init__(
        self,
        capacity_tokens: int,
        block_size: int = DEFAULT_BLOCK_SIZE,
        offload_tokens: int = 0,
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        if capacity_tokens < 0 or offload_tokens < 0:
            raise ValueError("capacities must be >= 0")
        self.block_size = block_size
        self.capacity_blocks = capacity_tokens // block_size
        self.offload_capacity_blocks = offload_tokens // block_size
        self._ref: dict[int, int] = {}  # resident GPU blocks -> refcount (0 = evictable)
        self._free: OrderedDict[int, None] = OrderedDict()  # refcount-0 blocks, LRU first
        self._anonymous = 0  # pinned blocks without a name (partial/output blocks)
        self._next_unnamed = -1  # freed unnamed blocks get ids -1, -2, ...: they never hit
        self._offload = _Tier(self.offload_capacity_blocks)
        self.counters = CacheCounters()
        self._victims: list[int] = []  # evicted in this step, offered to the offload tier
        self._seen: set[int] = set()  # every block ever cached

    # -- state -----------------------------------------------------------------------------

    @property
    def resident_blocks(self) -> int:
        return len(self._ref) + self._anonymous

    @property
    def pinned_blocks(self) -> int:
        return len(self._ref) - len(self._free) + self._anonymous

    @property
    def usage(self) -> float:
        """Pinned fraction of the GPU tier (vLLM's ``kv_cache_usage_perc``), capped at 1."""
        if self.capacity_blocks == 0:
            return 1.0 if self.pinned_blocks else 0.0
        return min(1.0, self.pinned_blocks / self.capacity_blocks)

    @property
    def offload_blocks(self) -> int:
        return len(self._offload.lru)

    @property
    def named_blocks(self) -> int:
        """Resident blocks cached under a hash (O(resident): for the end of a run)."""
        return sum(1 for b in self._ref if b >= 0)

    def __contains__(self, block: int) -> bool:
        """Whether ``block`` is resident in the GPU tier."""
        return block in self._ref

    def in_offload(self, block: int) -> bool:
        return block in self._offload.lru

    # -- lookups ---------------------------------------------------------------------------

    def _hits(self, blocks: list[int], prompt_tokens: int) -> tuple[int, int]:
        limit = min(hittable_blocks(prompt_tokens, self.block_size), len(blocks))
        g = _leading(self._ref, blocks, 0, limit)
        o = g
        if self._offload.capacity_blocks:
            o = _leading(self._offload.lru, blocks, g, limit)
        return g, o - g

    def lookup(self, hashes: npt.ArrayLike, prompt_tokens: int) -> tuple[int, int]:
        """``(gpu_hit_tokens, offload_hit_tokens)`` a request would get now. No side effects."""
        g, o = self._hits(_as_list(hashes), prompt_tokens)
        return g * self.block_size, o * self.block_size

    def blocks_needed(
        self, hashes: npt.ArrayLike, prompt_tokens: int, extra_tokens: int = 0
    ) -> int:
        """GPU blocks :meth:`allocate` would have to take from the free pool."""
        blocks = _as_list(hashes)
        ref = self._ref
        new = sum(1 for b in blocks if b not in ref)
        return new + self._anonymous_for(len(blocks), prompt_tokens, extra_tokens)

    def can_allocate(
        self, hashes: npt.ArrayLike, prompt_tokens: int, extra_tokens: int = 0
    ) -> bool:
        """Whether the request fits without over-commit: free + evictable blocks suffice.

        Resident blocks the request would re-pin cost nothing but also stop being evictable,
        so the test is ``pinned_after <= capacity``."""
        blocks = _as_list(hashes)
        rcs = list(map(self._ref.get, blocks))
        newly_pinned = rcs.count(None) + rcs.count(0)
        anon = self._anonymous_for(len(blocks), prompt_tokens, extra_tokens)
        return self.pinned_blocks + newly_pinned + anon <= self.capacity_blocks

    def _anonymous_for(self, n_full: int, prompt_tokens: int, extra_tokens: int) -> int:
        total = -(-(prompt_tokens + max(0, extra_tokens)) // self.block_size)
        return max(0, total - n_full)

    # -- allocation ------------------------------------------------------------------------

    def _evict_one(self) -> bool:
        if not self._free:
            return False
        block, _ = self._free.popitem(last=False)
        del self._ref[block]
        if block >= 0:
            self.counters.evicted_blocks += 1
            self._victims.append(block)
        return True

    def _offer(self) -> None:
        """This step's GPU victims enter the offload tier together."""
        self.counters.offload_evicted_blocks += self._offload.put_all(self._victims)
        self._victims = []

    def _make_room(self, blocks: int) -> None:
        while self.resident_blocks + blocks > self.capacity_blocks and self._evict_one():
            pass

    def allocate(
        self, hashes: npt.ArrayLike, prompt_tokens: int, extra_tokens: int = 0
    ) -> Allocation:
        """Look a request up, count it, and pin all its blocks for the duration of the request.

        Hit blocks are re-pinned, offloaded hits are loaded back into the GPU tier, and the
        rest are computed and cached under their hashes. ``extra_tokens`` reserves anonymous
        blocks for the output (and the partial last block) so usage reflects decode too."""
        blocks = _as_list(hashes)
        bs = self.block_size
        g, o = self._hits(blocks, prompt_tokens)
        c = self.counters
        c.requests += 1
        c.queries_tokens += prompt_tokens
        c.gpu_hit_tokens += g * bs
        if self._offload.capacity_blocks:
            c.offload_queries_tokens += prompt_tokens - g * bs
            c.offload_hit_tokens += o * bs
        offload = self._offload.lru
        for b in blocks[g : g + o]:  # loaded blocks stay in the offload tier, refreshed
            offload.move_to_end(b)

        ref = self._ref
        free = self._free
        missing: list[int] = []
        for b in blocks:  # pin what is resident first, so making room cannot evict it
            rc = ref.get(b)
            if rc is None:
                missing.append(b)
            else:
                if rc == 0:
                    del free[b]
                ref[b] = rc + 1
        for b in missing:
            rc = ref.get(b)
            if rc is None:
                self._make_room(1)
                ref[b] = 1
                if b in self._seen:
                    self.counters.refilled_blocks += 1
            else:  # the same hash twice in one request
                ref[b] = rc + 1
        self._seen.update(blocks)
        anon = self._anonymous_for(len(blocks), prompt_tokens, extra_tokens)
        self._make_room(anon)
        self._anonymous += anon
        self._offer()
        return Allocation(tuple(blocks), anon, prompt_tokens, g * bs, o * bs)

    def release(self, allocation: Allocation) -> None:
        """Unpin a request's blocks. Its unnamed blocks, then its tail, then its head become
        evictable, in that order."""
        ref = self._ref
        free = self._free
        self._anonymous -= allocation.anonymous_blocks
        for _ in range(allocation.anonymous_blocks):
            unnamed = self._next_unnamed
            self._next_unnamed -= 1
            ref[unnamed] = 0
            free[unnamed] = None
        for b in reversed(allocation.blocks):
            rc = ref.get(b)
            if rc is None:  # evicted while over-committed? cannot happen while pinned
                continue
            if rc <= 1:
                ref[b] = 0
                free[b] = None
            else:
                ref[b] = rc - 1
        self._make_room(0)
        self._offer()

    def named_among_newest(self) -> list[int]:
        out = [0]
        for b in reversed(self._free):
            out.append(out[-1] + (b >= 0))
        return out

    def observe(self, hashes: npt.ArrayLike, prompt_tokens: int) -> tuple[int, int]:
        """Allocate and release at once (a request in isolation, e.g. offline simulation)."""
        alloc = self.allocate(hashes, prompt_tokens)
        self.release(alloc)
        return alloc.gpu_hit_tokens, alloc.offload_hit_tokens

    def reset(self) -> None:
        """Drop every unpinned block from both tiers (vLLM's ``/reset_prefix_cache``)."""
        for b in self._free:
            del self._ref[b]
        self._free.clear()
        self._offload.lru.clear()


def _leading(present: Container[int], blocks: list[int], start: int, stop: int) -> int:
    """The end of the run of ``blocks[start:stop]`` found in ``present`` (C loops: a lookup
    walks ~2K blocks of a 100K-token prompt)."""
    return start + len(list(takewhile(present.__contains__, islice(blocks, start, stop))))


def _as_list(hashes: npt.ArrayLike) -> list[int]:
    if isinstance(hashes, list):
        return hashes
    if isinstance(hashes, tuple):
        return list(hashes)
    return np.asarray(hashes, dtype=np.uint64).tolist()  # type: ignore[no-any-return]
