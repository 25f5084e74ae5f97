"""How small a cache the unbounded run's timeline holds for: a capacity from which on every
run would refill nothing and keep nobody waiting for KV room, found in the unbounded pass.

On one timeline an LRU cache of ``C`` blocks holds the pinned blocks and the newest ``C - P``
entries of the unbounded cache's free queue (``P`` pinned; docs/simulate.md, "Passes that need
not run"). So a request refills a block at ``C`` iff one of its blocks is free at depth ``d >=
C - P`` (``d`` live entries were freed after it), and it waits for room iff ``P`` plus what it
newly pins exceeds ``C`` while another request runs. A run that does neither at any request
keeps the unbounded run's hits, so its timeline: it need not run.

The depth is bounded from above cheaply, per release rather than per entry: the live entries of
the releases after the block's (a Fenwick tree over releases, decremented as their blocks are
pinned again) plus the entries its own release freed after it. The bound is exact unless an
entry of that release was pinned again in between; a capacity at or above
:attr:`ReachCache.exact_from_blocks` is exact for sure, one below may still be (the pass runs).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.kvcache import Allocation
from agentx.prefixcache.kvcache.cache import Hashes
from agentx.prefixcache.kvcache.queue import Ids
from agentx.prefixcache.kvcache.unbounded import UnboundedKVCache

FIRST_RELEASES = 1 << 12


class ReachCache(UnboundedKVCache):
    """An :class:`UnboundedKVCache` that also bounds :attr:`exact_from_blocks`: a capacity in
    blocks from which on a cache fed the same requests at the same times refills no block and
    fails no ``can_allocate``."""

    def __init__(self, block_size: int) -> None:
        super().__init__(block_size)
        self.exact_from_blocks = 0
        self._starts = np.zeros(FIRST_RELEASES, dtype=np.int64)  # each release's first position
        self._live = np.zeros(FIRST_RELEASES + 1, dtype=np.int64)  # its live entries (1-based)
        self._fen = _tree(self._live)
        self._releases = 0
        self._live_total = 0

    def can_allocate(self, hashes: Hashes, prompt_tokens: int, extra_tokens: int = 0) -> bool:
        ids = self._dense(hashes)
        newly = int(np.count_nonzero(self._ref[ids] <= 0))
        anon = self._anonymous_for(int(ids.size), prompt_tokens, extra_tokens)
        self.exact_from_blocks = max(self.exact_from_blocks, self.pinned_blocks + newly + anon)
        return super().can_allocate(hashes, prompt_tokens, extra_tokens)

    def _pinning(self, ids: Ids, free_at: npt.NDArray[np.bool_], repeats: bool) -> None:
        free = ids[free_at]
        if free.size and repeats:
            free = np.unique(free)
        if free.size:
            at = self._freed_at[free]
            oldest, newest = int(at.min()), int(at.max())
            starts = self._starts[: self._releases]
            # the releases (1-based) of the oldest and newest: usually one, the thread's last
            # (a turn re-pins what the turn before it freed), so no search per block
            r = int(starts.searchsorted(oldest, side="right"))
            hi = int(starts.searchsorted(newest, side="right"))
            end = int(self._starts[r]) if r < self._releases else self._tail
            later = self._live_total - _prefix(self._fen, r)
            depth = later + (end - oldest - 1)
            self.exact_from_blocks = max(self.exact_from_blocks, self.pinned_blocks + depth + 1)
            if r == hi:
                self._add(r, -int(free.size))
            else:
                counts = np.bincount(starts.searchsorted(at, side="right") - r)
                for k in np.flatnonzero(counts).tolist():
                    self._add(r + k, -int(counts[k]))
            self._live_total -= int(free.size)

    def release(self, allocation: Allocation) -> None:
        start = self._tail
        self._release(allocation)
        n = self._tail - start  # unnamed entries and named blocks freed: one release
        if not n:
            return
        if self._releases == self._starts.size:
            self._starts = np.concatenate([self._starts, np.zeros_like(self._starts)])
            self._live = np.concatenate([self._live, np.zeros(self._starts.size // 2, np.int64)])
            self._fen = _tree(self._live)
        self._starts[self._releases] = start
        self._releases += 1
        self._add(self._releases, n)
        self._live_total += n

    def _add(self, r: int, delta: int) -> None:
        self._live[r] += delta
        tree, size = self._fen, self._fen.size - 1
        while r <= size:
            tree[r] += delta
            r += r & -r


def _tree(values: Ids) -> Ids:
    """The Fenwick tree of ``values[1:]`` (``values[0]`` unused): node ``i`` sums
    ``values[i - lowbit(i) + 1 .. i]``."""
    cs = np.cumsum(values)
    i = np.arange(values.size, dtype=np.int64)
    tree: Ids = cs - cs[i - (i & -i)]
    tree[0] = 0
    return tree


def _prefix(tree: Ids, r: int) -> int:
    """Sum of releases ``1..r``, in scalars (a request asks for one: no array round trip)."""
    total = 0
    while r:
        total += int(tree[r])
        r &= r - 1
    return total
