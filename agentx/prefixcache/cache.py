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
    """A set of 64-bit block hashes at ~8 bytes each (a Python set costs ~60), held as sorted
    numpy levels: hashes not held yet are merged into the newest level while it is under
    ``buffer``, else start a new one; levels merge like an LSM tree (a level merges into the one
    before it while that is at most twice its size), so there are O(log n) of them and a lookup
    is a binary search per level. A level stops growing past ``max_level`` hashes: merging two
    big ones would briefly hold them twice."""

    def __init__(self, buffer: int = 1 << 16, max_level: int = 1 << 22) -> None:
        self._buffer_size = buffer
        self._max_level = max_level
        self._levels: list[npt.NDArray[np.uint64]] = []

    def __len__(self) -> int:
        return sum(int(x.size) for x in self._levels)

    def __contains__(self, h: int) -> bool:
        key = np.uint64(h)
        for level in reversed(self._levels):  # the newest first: a chain's recent blocks
            i = int(np.searchsorted(level, key))
            if i < level.size and level[i] == key:
                return True
        return False

    def update(self, hashes: Iterable[int] | HashArray) -> None:
        new = np.unique(
            np.asarray(hashes if isinstance(hashes, np.ndarray) else list(hashes), dtype=np.uint64)
        )
        if not new.size:
            return
        fresh = np.ones(new.size, dtype=bool)  # keep out what the levels hold: lengths stay exact
        for level in self._levels:
            i = np.minimum(np.searchsorted(level, new), level.size - 1)
            fresh &= level[i] != new
        new = new[fresh]
        if not new.size:
            return
        levels = self._levels
        if levels and levels[-1].size < self._buffer_size:
            levels[-1] = _merge(levels[-1], new)
        else:
            levels.append(new)
        while (
            len(levels) > 1
            and levels[-2].size <= 2 * levels[-1].size
            and levels[-2].size + levels[-1].size <= self._max_level
        ):
            top = levels.pop()
            levels[-1] = _merge(levels[-1], top)


def _merge(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Sorted union of two sorted arrays with no hash in common: ``b`` inserted where it goes
    in ``a`` (transient memory: the result and ``b``'s positions)."""
    at = np.searchsorted(a, b) + np.arange(b.size)
    out = np.empty(a.size + b.size, dtype=np.uint64)
    from_a = np.ones(out.size, dtype=bool)
    from_a[at] = False
    out[at] = b
    out[from_a] = a
    return out


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
            self._seen.update(hashes[hit:])
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
