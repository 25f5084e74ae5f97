"""Delta encoding of the block ids of hash-only rows (trace format v1.1). Pure Python.

A turn of an imported agent session repeats its parent's prompt and appends to it, so its block
ids are (almost always) its parent's ids plus a few new ones. A row stores

    hash_ids(r) = hash_ids(base)[0 : base_len] + delta(r)

with ``base = hash_ids_base_id`` (``None``: ``base_len`` is 0 and the delta is the whole list),
like the conversation columns. The base is chosen among the row's ``parent_request_id`` and the
previous hash row of its thread, as the one sharing the longest prefix; it always precedes the
row in the file. A 100-turn thread of ~1,500 blocks per turn stores ~1,500 + 100 x (new blocks)
ids instead of 150,000.

Id lists are tuples of ints: a child's list is its base's slice plus the delta, so the int
objects are shared, and comparing prefixes is a C-level tuple comparison.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from agentx.prefixcache.hashing import common_prefix

Ids = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HashDelta:
    base_id: str | None
    base_len: int
    delta: Ids


class HashDeltaEncoder:
    """Picks each hash row's base in bounded memory: the last hash row of each thread (up to
    ``keep_threads`` threads, least recently extended forgotten first) and the ``keep_recent``
    most recent hash rows (parents in another thread)."""

    def __init__(self, keep_recent: int = 64, keep_threads: int = 16384) -> None:
        self._recent: OrderedDict[str, Ids] = OrderedDict()
        self._thread_last: OrderedDict[tuple[str, str], tuple[str, Ids]] = OrderedDict()
        self._keep_recent = keep_recent
        self._keep_threads = keep_threads

    def encode(
        self, request_id: str, parent_id: str | None, thread: tuple[str, str], ids: Ids
    ) -> HashDelta:
        candidates: list[tuple[str, Ids]] = []
        if parent_id is not None and parent_id in self._recent:
            candidates.append((parent_id, self._recent[parent_id]))
        last = self._thread_last.get(thread)
        if last is not None and last[0] != parent_id:
            candidates.append(last)
        base_id: str | None = None
        base_len = 0
        for candidate, seen in candidates:
            n = common_prefix(seen, ids)
            if n > base_len:
                base_id, base_len = candidate, n
        self._recent[request_id] = ids
        self._recent.move_to_end(request_id)
        while len(self._recent) > self._keep_recent:
            self._recent.popitem(last=False)
        self._thread_last[thread] = (request_id, ids)
        self._thread_last.move_to_end(thread)
        while len(self._thread_last) > self._keep_threads:
            self._thread_last.popitem(last=False)
        return HashDelta(base_id, base_len, ids[base_len:])


class HashDeltaDecoder:
    """Rebuilds full id lists in file order, keeping only the lists later rows extend
    (``base_refcounts``: how many rows name each id as ``hash_ids_base_id``)."""

    def __init__(self, base_refcounts: dict[str, int]) -> None:
        self._refs = dict(base_refcounts)
        self._ids: dict[str, Ids] = {}

    def decode(self, request_id: str, base_id: str | None, base_len: int | None, delta: Ids) -> Ids:
        ids = delta
        if base_id is not None:
            base = self._ids.get(base_id)
            n = base_len or 0
            if base is None or n > len(base):
                raise ValueError(f"row {request_id} extends the ids of {base_id}, not before it")
            ids = base[:n] + delta
            self._refs[base_id] -= 1
            if self._refs[base_id] <= 0:
                del self._ids[base_id]
        if self._refs.get(request_id, 0) > 0:
            self._ids[request_id] = ids
        return ids


# -- the spool's spelling of an id list: runs of consecutive ids ----------------------------


def to_runs(ids: Ids) -> list[int] | None:
    """``[first, count, first, count, ...]`` for runs of consecutive ids, or ``None`` when that
    is not at least twice as short (imported ids are mostly consecutive: a new block gets the
    next id)."""
    if len(ids) < 4:
        return None
    out: list[int] = []
    start = prev = ids[0]
    for x in ids[1:]:
        if x != prev + 1:
            out += (start, prev - start + 1)
            if 2 * len(out) > len(ids):
                return None
            start = x
        prev = x
    out += (start, prev - start + 1)
    return out if 2 * len(out) <= len(ids) else None


def from_runs(runs: list[int]) -> list[int]:
    out: list[int] = []
    for i in range(0, len(runs), 2):
        first, count = runs[i], runs[i + 1]
        out.extend(range(first, first + count))
    return out
