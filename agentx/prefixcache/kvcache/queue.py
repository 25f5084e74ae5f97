"""An LRU order of block ids as an append-only array with lazy deletion.

vLLM's free-block queue (and an offload tier's LRU) moves a block to the back when it is freed
or touched and takes victims from the front. Here "moving" is appending the id again: each
entry has an absolute position, the owner keeps the position of every block's live entry in an
array (``pos[id]``, -1 for none), and an entry whose position is not its block's is stale and
skipped. Victims are the first live entries; the array is compacted (live entries only, order
kept, positions renumbered) when it fills. Every operation is a few numpy calls on a batch.

Both arrays are int32 while their values fit (4 bytes a block less each, at ~14M blocks the
bounded passes' largest arrays): ids do (a cache's ids are int32 in its table, or dense ids
below 2**31), and the owner's positions are widened to int64 by :meth:`PositionQueue.push`
before they outgrow it (positions only grow: they count every entry ever queued).

Id 0 stands for an *unnamed* block (a freed partial or output block): such entries are always
live, and nothing ever refers to them again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
Positions = npt.NDArray[np.signedinteger[Any]]  # int32 until the positions outgrow it
UNNAMED = 0
MIN_ROOM = 1 << 10
# free room a compaction leaves at least (besides doubling): a small cache's queue, compacted
# whenever ~2 requests' blocks filled it, was most of its compactions' cost; 256 KB
MIN_SLACK = 1 << 16
_QUEUED = np.int32  # the queue's own copy of its ids
_LARGEST = {np.dtype(t): int(np.iinfo(t).max) for t in (np.int32, np.int64)}


def new_positions(size: int) -> Positions:
    """An owner's positions array: ``-1`` (no entry) for ``size`` ids, int32 to start with."""
    return np.full(size, -1, dtype=np.int32)


class PositionQueue:
    """Front = least recently queued (see the module docstring)."""

    def __init__(self) -> None:
        self._ids: npt.NDArray[np.int32] = np.zeros(MIN_ROOM, dtype=_QUEUED)
        self._base = 0  # absolute position of _ids[0]
        self.head = 0  # absolute position of the first entry not yet consumed
        self.tail = 0  # absolute position of the next entry

    def push(self, ids: Ids, pos: Positions) -> Positions:
        """Queue ``ids`` at the back, in order, and record their positions in ``pos``; returns
        ``pos``, or an int64 copy of it when the positions written could outgrow its type (the
        owner keeps what is returned). An id queued twice keeps its last entry (a touched block
        moves to the back)."""
        n = int(ids.size)
        pos = self._room(pos, n)
        at = self.tail - self._base
        self._ids[at : at + n] = ids
        named = ids != UNNAMED
        pos[ids[named]] = np.arange(self.tail, self.tail + n)[named]
        self.tail += n
        return pos

    def push_named(self, ids: Ids, pos: Positions, unnamed: int = 0) -> Positions:
        """:meth:`push` of ``unnamed`` unnamed entries, then of ``ids``, none of them
        :data:`UNNAMED` (a release's entries, at once)."""
        n = int(ids.size)
        pos = self._room(pos, unnamed + n)
        at = self.tail - self._base
        if unnamed:
            self._ids[at : at + unnamed] = UNNAMED
            at += unnamed
            self.tail += unnamed
        self._ids[at : at + n] = ids
        pos[ids] = np.arange(self.tail, self.tail + n)
        self.tail += n
        return pos

    def _room(self, pos: Positions, n: int) -> Positions:
        """Room for ``n`` more entries; ``pos``, widened to int64 if they could outgrow it."""
        # a compaction renumbers the entries after head from tail on, then the new ones follow
        if self.tail + (self.tail - self.head) + n >= _LARGEST[pos.dtype]:
            pos = pos.astype(np.int64)
        if self.tail + n - self._base > self._ids.size:
            self._compact(pos, n)
        return pos

    def take(self, k: int, pos: Positions) -> Ids:
        """Remove and return up to ``k`` live entries from the front (their ``pos`` is left to
        the caller, who knows what became of them)."""
        out: list[npt.NDArray[np.int32]] = []
        need = k
        while need > 0 and self.head < self.tail:
            n = min(self.tail - self.head, max(4 * need, 256))
            at = self.head - self._base
            ids = self._ids[at : at + n]
            live = np.flatnonzero(
                (ids == UNNAMED) | (pos[ids] == np.arange(self.head, self.head + n))
            )
            if live.size >= need:
                out.append(ids[live[:need]])
                self.head += int(live[need - 1]) + 1
                need = 0
            else:
                out.append(ids[live])
                self.head += n
                need -= int(live.size)
        if len(out) == 1:
            return out[0].astype(np.int64)
        return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)

    def live(self, pos: Positions) -> Ids:
        """The live entries, front first (a copy)."""
        return self._live(pos).astype(np.int64)

    def _live(self, pos: Positions) -> npt.NDArray[np.int32]:
        at, end = self.head - self._base, self.tail - self._base
        ids = self._ids[at:end]
        live: npt.NDArray[np.int32] = ids[
            (ids == UNNAMED) | (pos[ids] == np.arange(self.head, self.tail))
        ]
        return live

    def clear(self) -> None:
        """Drop every entry (the owner resets its positions)."""
        self._base = self.head = self.tail

    def _compact(self, pos: Positions, extra: int) -> None:
        live = self._live(pos)
        room = max(MIN_ROOM, self._ids.size)
        while live.size + extra > room // 2 or room - live.size - extra < MIN_SLACK:
            room *= 2
        if room != self._ids.size:
            self._ids = np.zeros(room, dtype=_QUEUED)
        self._ids[: live.size] = live
        self._base = self.head = self.tail
        named = live != UNNAMED
        pos[live[named]] = np.arange(self.tail, self.tail + live.size)[named]
        self.tail += int(live.size)
