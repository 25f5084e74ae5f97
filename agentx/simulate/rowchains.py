"""Chained block hashes of hash-only rows read as stored: a base row's first ids, then a delta.

A trace stores a hash-only row's ids as what it adds to an earlier row
(:class:`agentx.store.rowids.RowIds`); usually its thread's previous turn, whose chain the
thread holds already. :class:`RowChainer` chains a row from its base's prefix sums and pays
for its delta only: no tuple of ids is rebuilt and no common prefix searched
(:class:`agentx.prefixcache.hashing.IdChainer` does both for rows given whole). The hashes are
:func:`agentx.prefixcache.hashing.chain_ids` of the row's full ids either way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.core.errors import TraceError
from agentx.prefixcache.hashing import HashArray, extend_chain
from agentx.store.rowids import RowIds


@dataclass(slots=True)
class _Held:
    """A thread's last row chained: its prefix sums and hashes (``n`` valid of each)."""

    locator: int
    sums: npt.NDArray[np.uint64]
    hashes: HashArray
    n: int


def _empty() -> npt.NDArray[np.uint64]:
    return np.zeros(0, dtype=np.uint64)


class RowChainer:
    """The chained hashes of each row's full ids, per thread: each thread holds its last row's
    chain, and a row extending a row some thread holds (its own previous turn, or a parent's
    turn it branched from) extends that chain; else the rows back to one held, or to the
    first, are chained in turn. At most ``max_threads`` threads are held (LRU; ~16 bytes a
    block each). The result is a view valid until the thread's next row.
    """

    def __init__(self, max_threads: int = 512) -> None:
        self._max_threads = max_threads
        self._threads: OrderedDict[Hashable, _Held] = OrderedDict()
        self._held: dict[int, _Held] = {}  # a thread's last row's locator -> the thread's chain
        self.rebuilt = 0  # rows chained on the way to one asked for (no chain held of its base)

    def chain(self, thread: Hashable, locator: int, rows: Mapping[int, RowIds]) -> HashArray:
        """``chain_ids`` of row ``locator``'s full ids; ``rows`` holds it and every row its ids
        extend (by locator)."""
        st = self._threads.pop(thread, None)
        if st is not None and self._held.get(st.locator) is st:
            del self._held[st.locator]
        self._threads[thread] = st = st or _Held(-1, _empty(), _empty(), 0)
        while len(self._threads) > self._max_threads:
            _, old = self._threads.popitem(last=False)
            if self._held.get(old.locator) is old:
                del self._held[old.locator]
        path: list[int] = []  # the rows to chain, the asked one first
        at = locator
        held: _Held | None = None
        while at >= 0:
            held = st if at == st.locator else self._held.get(at)
            if held is not None:
                break
            path.append(at)
            at = rows[at].base
        self.rebuilt += max(0, len(path) - 1)
        n = held.n if held is not None else 0
        if held is not None and held is not st:  # another thread's: copy the prefix kept
            k = rows[path[-1]].base_len if path else n
            st.sums, st.hashes = (
                _room(st.sums, k, held.sums, k),
                _room(st.hashes, k, held.hashes, k),
            )
            n = k
        for loc in reversed(path):
            ids = rows[loc]
            k = ids.base_len if ids.base >= 0 else 0
            if k > n:  # (the reader checks this: a trace changed under it)
                raise TraceError(f"corrupt trace (a row keeps {k} ids of a row of {n})")
            end = k + int(ids.delta.size)
            st.sums = _room(st.sums, end, st.sums, k)
            st.hashes = _room(st.hashes, end, st.hashes, k)
            if end > k:
                carry = st.sums[k - 1] if k else None
                st.sums[k:end], st.hashes[k:end] = extend_chain(ids.delta, k, carry)
            n = end
        st.locator, st.n = locator, n
        self._held[locator] = st
        return st.hashes[:n]


def _room(
    buf: npt.NDArray[np.uint64], size: int, source: npt.NDArray[np.uint64], keep: int
) -> npt.NDArray[np.uint64]:
    """``buf`` with ``source[:keep]`` at its start and room for ``size`` entries (``buf`` itself
    when it is the source and large enough; else a new buffer, doubled to grow in place next)."""
    if buf is source and size <= buf.size:
        return buf
    if buf is not source and size <= buf.size:
        buf[:keep] = source[:keep]
        return buf
    out = np.empty(max(size, 2 * buf.size), dtype=np.uint64)
    out[:keep] = source[:keep]
    return out
