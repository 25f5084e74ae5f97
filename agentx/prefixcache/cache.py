"""The unbounded prefix cache: what a cache that never evicts would serve, block by block.

A request can hit at most its first ``floor((n - 1) / block_size)`` blocks (vLLM always computes
the last prompt token); since every inserted block brings its whole prefix, its hit is found by
one binary search (:func:`hit_blocks`). Blocks are held in a :class:`BlockSet` (~8 bytes each), so
it scales to corpus-size traces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE, HashArray


def hittable_blocks(n_tokens: int, block_size: int) -> int:
    """vLLM never serves the last prompt token from cache: at most floor((n-1)/bs) blocks."""
    return max(0, (n_tokens - 1) // block_size)


@dataclass(frozen=True, slots=True)
class PrefixLookup:
    """How much of one request an unbounded cache served."""

    prompt_tokens: int
    hit_tokens: int


class BlockSet:
    """A set of 64-bit block hashes at ~8 bytes each (a Python set costs ~60): new hashes collect
    in a small set, which is sorted into a numpy level when full; levels merge like an LSM tree,
    so there are O(log n) of them and a lookup is a binary search per level."""

    def __init__(self, buffer: int = 1 << 18) -> None:
        self._buffer_size = buffer
        self._buf: set[int] = set()
        self._levels: list[npt.NDArray[np.uint64]] = []

    def __len__(self) -> int:
        return len(self._buf) + sum(int(x.size) for x in self._levels)

    def __contains__(self, h: int) -> bool:
        if h in self._buf:
            return True
        key = np.uint64(h)
        for level in self._levels:
            i = int(np.searchsorted(level, key))
            if i < level.size and level[i] == key:
                return True
        return False

    def update(self, hashes: list[int]) -> None:
        if self._levels and hashes:  # keep out what the levels hold: lengths stay exact
            new = np.asarray(hashes, dtype=np.uint64)
            fresh = np.ones(new.size, dtype=bool)
            for level in self._levels:
                i = np.minimum(np.searchsorted(level, new), level.size - 1)
                fresh &= level[i] != new
            hashes = new[fresh].tolist()
        self._buf.update(hashes)
        if len(self._buf) >= self._buffer_size:
            level = np.fromiter(self._buf, dtype=np.uint64, count=len(self._buf))
            level.sort()
            self._buf.clear()
            self._levels.append(level)
            while len(self._levels) > 1 and self._levels[-2].size <= 2 * self._levels[-1].size:
                top = self._levels.pop()
                self._levels[-1] = _merge(self._levels[-1], top)


def _merge(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Sorted union of two sorted arrays (about twice their size in transient memory)."""
    merged = np.concatenate((a, b))
    merged.sort(kind="stable")  # two sorted runs: timsort-like merge
    keep = np.empty(merged.size, dtype=bool)
    keep[:1] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


def hit_blocks(hashes: HashArray, limit: int, seen: BlockSet) -> int:
    """The largest ``k <= limit`` such that block ``k - 1`` of a request's chain is in ``seen``:
    its hit, in blocks. A binary search, because presence is monotone along a chain (every
    block inserted brought its whole prefix)."""
    lo, hi = 0, max(0, min(limit, int(hashes.size)))
    while lo < hi:  # largest k with hashes[k-1] in seen
        mid = (lo + hi + 1) // 2
        if int(hashes[mid - 1]) in seen:
            lo = mid
        else:
            hi = mid - 1
    return lo


class UnboundedPrefixCache:
    """An unbounded block cache. Since every inserted block brings its whole prefix, presence is
    monotone along a request's chain, so the hit length is found by binary search. Blocks are
    held in a :class:`BlockSet` (~8 bytes each), so it scales to large traces."""

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        self.block_size = block_size
        self._seen = BlockSet()
        self.prompt_tokens = 0
        self.hit_tokens = 0

    def __len__(self) -> int:
        return len(self._seen)

    def observe(self, hashes: HashArray, prompt_tokens: int) -> PrefixLookup:
        """Look the request up, then insert all its full blocks."""
        hit = hit_blocks(hashes, hittable_blocks(prompt_tokens, self.block_size), self._seen)
        if hit < hashes.size:
            self._seen.update(hashes[hit:].tolist())
        hit_tokens = hit * self.block_size
        self.prompt_tokens += prompt_tokens
        self.hit_tokens += hit_tokens
        return PrefixLookup(prompt_tokens, hit_tokens)

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def theoretical_hit_rate(
    requests: Iterable[tuple[HashArray, int]], block_size: int = DEFAULT_BLOCK_SIZE
) -> float:
    """Hit rate of an unbounded cache over ``(block hashes, prompt tokens)`` in arrival order."""
    cache = UnboundedPrefixCache(block_size)
    for hashes, n in requests:
        cache.observe(hashes, n)
    return cache.hit_rate
