"""Dense block ids: 64-bit chained block hashes numbered ``first_id, first_id + 1, ...`` in
order of first appearance (:class:`DenseIds`), and a stream of requests numbered along their
threads (:class:`Renumberer`), so the engines keep per-block state in flat arrays.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentx.core.errors import UsageError
from agentx.prefixcache.hashing import HashArray

# levels are not merged past this many hashes: a merge holds both levels and the merged one
# at once (~24 bytes a block), which at 14M blocks was the first pass's peak; a few more
# levels cost a few more binary searches a request
LARGEST_MERGE = 1 << 22
IdArray = npt.NDArray[np.int32]  # dense block ids (2**31 distinct blocks: 137G tokens at 64)
MAX_BLOCKS = 2**31 - 1


class DenseIds:
    """64-bit chained block hashes -> dense ids ``first_id, first_id + 1, ...`` in order of
    first appearance, at ~16 bytes per distinct block (a dict costs ~100): recent hashes in a
    dict, older ones in sorted numpy levels merged like an LSM tree (O(log n) levels, vectorised
    lookups).

    Each call is a chain (or a chain's tail) whose hashes every earlier call named with their
    whole prefix (as :class:`Renumberer` calls it): a chained hash names its prefix, so the
    hashes already named are a leading run, found by binary search, and the rest are new and
    take the next ids without a lookup. (Searching every level for every new hash was most of
    the cost: cache misses in levels of millions.)"""

    def __init__(
        self, buffer: int = 1 << 16, first_id: int = 0, *, largest_merge: int = LARGEST_MERGE
    ) -> None:
        self._buffer_size = buffer
        self._largest_merge = largest_merge
        self._first = first_id
        self._recent: dict[int, int] = {}
        # the recent hashes again, as the arrays they came in: their ids run on from the first
        # one not in a level, so a flush sorts them without reading the dict back
        self._chunks: list[HashArray] = []
        self._levels: list[tuple[HashArray, IdArray]] = []
        self.size = 0

    def _named(self, h: int) -> bool:
        if h in self._recent:
            return True
        key = np.uint64(h)
        for keys, _ in self._levels:
            i = int(keys.searchsorted(key))  # (the method: not numpy's wrapper, per probe)
            if i < keys.size and keys[i] == key:
                return True
        return False

    def _known(self, hashes: HashArray) -> int:
        """How many leading hashes are named already."""
        n = int(hashes.size)
        if not n or not self._named(int(hashes[0])):
            return 0
        if self._named(int(hashes[n - 1])):
            return n
        lo, hi = 1, n - 1  # hashes[lo - 1] named, hashes[hi] not
        while lo < hi:
            mid = (lo + hi) // 2
            if self._named(int(hashes[mid])):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _lookup(self, hashes: HashArray) -> IdArray:
        """The ids of hashes all named already."""
        out = np.full(hashes.size, -1, dtype=np.int32)
        for keys, vals in self._levels:
            i = np.minimum(np.searchsorted(keys, hashes), keys.size - 1)
            found = keys[i] == hashes
            out[found] = vals[i[found]]
        missing = np.flatnonzero(out < 0)
        if missing.size:
            out[missing] = list(map(self._recent.__getitem__, hashes[missing].tolist()))
        return out

    def ids(self, hashes: HashArray) -> IdArray:
        known = self._known(hashes)
        out = np.empty(hashes.size, dtype=np.int32)
        if known:
            out[:known] = self._lookup(hashes[:known])
        new = int(hashes.size) - known
        if new:
            start = self._first + self.size
            if start + new - 1 > MAX_BLOCKS:
                raise UsageError(
                    f"more than {MAX_BLOCKS:,} distinct blocks: use a larger --block-size"
                )
            out[known:] = np.arange(start, start + new, dtype=np.int32)
            fresh = hashes[known:].copy()  # (not a view: the caller's buffer is reused)
            self._recent.update(zip(fresh.tolist(), range(start, start + new), strict=True))
            self._chunks.append(fresh)
            self.size += new
            if len(self._recent) >= self._buffer_size:
                self._flush()
        return out

    def _flush(self) -> None:
        keys = np.concatenate(self._chunks)
        first = self._first + self.size - int(keys.size)
        order = np.argsort(keys)
        self._levels.append((keys[order], (order + first).astype(np.int32)))
        self._recent.clear()
        self._chunks.clear()
        levels = self._levels
        while (
            len(levels) > 1
            and levels[-2][0].size <= 2 * levels[-1][0].size
            and levels[-2][0].size + levels[-1][0].size <= self._largest_merge
        ):
            newer = self._levels.pop()
            self._levels.append(_merged(self._levels.pop(), newer))


def _merged(
    a: tuple[HashArray, IdArray], b: tuple[HashArray, IdArray]
) -> tuple[HashArray, IdArray]:
    """Two sorted levels (no key in both) as one, without sorting again: ``b``'s keys go where a
    binary search puts them (a sort of the concatenation held three copies of the keys and an
    int64 order at the largest merge, a peak of ~32 bytes per block)."""
    (ka, va), (kb, vb) = a, b
    n = ka.size + kb.size
    at = np.searchsorted(ka, kb)
    at += np.arange(kb.size, dtype=at.dtype)  # b's final positions
    from_a = np.ones(n, dtype=bool)
    from_a[at] = False
    keys = np.empty(n, dtype=np.uint64)
    vals = np.empty(n, dtype=np.int32)
    keys[at], vals[at] = kb, vb
    keys[from_a], vals[from_a] = ka, va
    return keys, vals


class _ThreadIds:
    """A thread's last hashes and the buffer its requests' id arrays are views of."""

    __slots__ = ("hashes", "ids", "n")

    def __init__(self) -> None:
        self.hashes: HashArray = np.zeros(0, dtype=np.uint64)
        self.ids: IdArray = np.zeros(0, dtype=np.int32)
        self.n = 0


class Renumberer:
    """Dense block ids for a stream of requests, shared where requests share a prefix.

    A chained hash names its whole prefix, so the part a request shares with the previous
    request of its thread is found with one vectorised comparison and keeps that request's ids;
    only the rest goes through :class:`DenseIds`. The id array of a request that extends its
    predecessor is a *view* of the same buffer (a thread of 100 growing turns holds its ids
    about once, not 100 times); a request that cuts back starts a new buffer. The last hashes
    of at most ``max_threads`` threads are remembered (LRU): a forgotten thread's next request
    is renumbered whole, with the same ids.
    """

    def __init__(self, max_threads: int = 512, *, first_id: int = 0) -> None:
        self.index = DenseIds(first_id=first_id)
        self._threads: dict[str, _ThreadIds] = {}
        self._max_threads = max_threads

    def ids(self, hashes: HashArray, thread: str) -> IdArray:
        st = self._threads.pop(thread, None) or _ThreadIds()
        self._threads[thread] = st  # most recent last
        if len(self._threads) > self._max_threads:
            del self._threads[next(iter(self._threads))]
        n, prev = int(hashes.size), st.n
        m = min(prev, n)
        differ = st.hashes[:m] != hashes[:m]
        first = int(differ.argmax()) if m else 0  # the first difference, or 0 for none
        k = first if m and differ[first] else m
        if k < prev or n > st.ids.size:  # cut back, or no room: a new buffer
            buf = np.empty(max(n, 2 * st.ids.size if k == prev else n), dtype=np.int32)
            buf[:k] = st.ids[:k]
            st.ids = buf
        st.ids[k:n] = self.index.ids(hashes[k:])
        if n > st.hashes.size:
            grown = np.empty(max(n, 2 * st.hashes.size), dtype=np.uint64)
            grown[:k] = st.hashes[:k]
            st.hashes = grown
        st.hashes[k:n] = hashes[k:]
        st.n = n
        return st.ids[:n]
