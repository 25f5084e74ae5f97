"""An LRU order of block ids as an append-only array with lazy deletion.

vLLM's free-block queue (and an offload tier's LRU) moves a block to the back when it is freed
or touched and takes victims from the front. Here "moving" is appending the id again: each
entry has an absolute position, the owner keeps the position of every block's live entry in an
array (``pos[id]``, -1 for none), and an entry whose position is not its block's is stale and
skipped. Victims are the first live entries; the array is compacted (live entries only, order
kept, positions renumbered) when it fills. Every operation is a few numpy calls on a batch.

Id 0 stands for an *unnamed* block (a freed partial or output block): such entries are always
live, and nothing ever refers to them again.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
UNNAMED = 0
MIN_ROOM = 1 << 10


class PositionQueue:
    """Front = least recently queued (see the module docstring)."""

    def __init__(self) -> None:
        self._ids: Ids = np.zeros(MIN_ROOM, dtype=np.int64)
        self._base = 0  # absolute position of _ids[0]
        self.head = 0  # absolute position of the first entry not yet consumed
        self.tail = 0  # absolute position of the next entry

    def push(self, ids: Ids, pos: Ids) -> None:
        """Queue ``ids`` at the back, in order, and record their positions in ``pos``. An id
        queued twice keeps its last entry (a touched block moves to the back)."""
        n = int(ids.size)
        if self.tail + n - self._base > self._ids.size:
            self._compact(pos, n)
        at = self.tail - self._base
        self._ids[at : at + n] = ids
        named = ids != UNNAMED
        pos[ids[named]] = np.arange(self.tail, self.tail + n)[named]
        self.tail += n

    def take(self, k: int, pos: Ids) -> Ids:
        """Remove and return up to ``k`` live entries from the front (their ``pos`` is left to
        the caller, who knows what became of them)."""
        out: list[Ids] = []
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
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def live(self, pos: Ids) -> Ids:
        """The live entries, front first (a copy)."""
        at, end = self.head - self._base, self.tail - self._base
        ids = self._ids[at:end]
        live: Ids = ids[(ids == UNNAMED) | (pos[ids] == np.arange(self.head, self.tail))]
        return live

    def clear(self) -> None:
        """Drop every entry (the owner resets its positions)."""
        self._base = self.head = self.tail

    def _compact(self, pos: Ids, extra: int) -> None:
        live = self.live(pos)
        room = max(MIN_ROOM, self._ids.size)
        while live.size + extra > room // 2:
            room *= 2
        if room != self._ids.size:
            self._ids = np.zeros(room, dtype=np.int64)
        self._ids[: live.size] = live
        self._base = self.head = self.tail
        named = live != UNNAMED
        pos[live[named]] = np.arange(self.tail, self.tail + live.size)[named]
        self.tail += int(live.size)
