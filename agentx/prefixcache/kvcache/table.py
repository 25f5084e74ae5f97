"""Block hashes to dense ids, a batch at a time: a bucketed hash table in numpy arrays.

The KV cache keeps its per-block state (refcount, queue positions) in flat arrays indexed by a
block's *id*, so one request's ~2K blocks are a handful of vectorised operations instead of
~2K dictionary operations each. This table gives each distinct 64-bit block hash its id
(1, 2, ... in order of first sight; 0 means unknown) and never moves or reuses one: the table
grows by rehashing its keys, the ids stay.

Most of a request was in an earlier one: a conversation re-sends its whole prefix each turn.
The table remembers the recent requests' (keys, ids) by their first key
(:class:`RecentChains`), so only the part past the longest remembered prefix is looked up in
the buckets: the blocks a turn appended. That matters because a bucket lookup is a random read
of a table the size of every block ever seen (a cache miss per block at corpus size), where
the remembered ids are one contiguous copy.

A key lives in its home bucket (a Fibonacci hash of the key) or, when that bucket's
:data:`WIDTH` slots are taken, in the next bucket with room; buckets fill left to right and
never empty, and the table is at most half full, so a lookup of a whole request is almost
always one gather of its home buckets and one comparison.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import numpy.typing as npt

Keys = npt.NDArray[np.uint64]
Ids = npt.NDArray[np.int64]

WIDTH = 8  # slots per bucket
_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: Fibonacci hashing
MIN_BITS = 7
CHAINS_PER_HEAD = 8  # remembered requests per first key (a session's threads)
KEYS_KEPT = 1 << 21  # remembered keys in all (16 bytes each with the id): 32 MB


class RecentChains:
    """Recent requests' keys and ids, by first key: the longest remembered prefix of a new
    request (its ids without a table lookup)."""

    def __init__(self) -> None:
        self._heads: OrderedDict[int, list[tuple[Keys, Ids]]] = OrderedDict()
        self._kept = 0  # keys remembered

    def match(self, keys: Keys) -> tuple[int, Ids]:
        """``(n, ids)``: the first ``n`` keys are a remembered prefix with these ids."""
        best, best_ids = 0, _NO_IDS
        if not keys.size:
            return best, best_ids
        for known, ids in self._heads.get(int(keys[0]), ()):
            m = min(keys.size, known.size)
            same = keys[:m] == known[:m]
            n = m if same.all() else int(np.argmin(same))
            if n > best:
                best, best_ids = n, ids
        return best, best_ids[:best]

    def remember(self, keys: Keys, ids: Ids) -> None:
        """Keep a request's keys and ids; remembered prefixes of it are dropped."""
        if not keys.size:
            return
        head = int(keys[0])
        chains = [(keys.copy(), ids), *self._heads.pop(head, [])]
        ids.flags.writeable = False  # handed out as views
        kept = [chains[0]]
        for k, i in chains[1:]:
            if len(kept) < CHAINS_PER_HEAD and not (
                k.size <= keys.size and bool((keys[: k.size] == k).all())
            ):
                kept.append((k, i))
        self._kept += sum(k.size for k, _ in kept) - sum(k.size for k, _ in chains[1:])
        self._heads[head] = kept
        while self._kept > KEYS_KEPT and len(self._heads) > 1:
            _, dropped = self._heads.popitem(last=False)
            self._kept -= sum(k.size for k, _ in dropped)


_NO_IDS: Ids = np.zeros(0, dtype=np.int64)


class BlockTable:
    """Distinct uint64 keys -> ids 1..``size``, vectorised (see the module docstring)."""

    def __init__(self, bits: int = MIN_BITS) -> None:
        self.size = 0  # ids handed out
        self._bits = bits
        self._keys = np.zeros((1 << bits, WIDTH), dtype=np.uint64)
        self._ids = np.zeros((1 << bits, WIDTH), dtype=np.int32)  # 0 = empty slot
        self._fill = np.zeros(1 << bits, dtype=np.int64)  # slots taken per bucket
        self._recent = RecentChains()

    @property
    def slots(self) -> int:
        return WIDTH << self._bits

    def _home(self, keys: Keys) -> Ids:
        with np.errstate(over="ignore"):
            mixed = keys * _MIX
        return (mixed >> np.uint64(64 - self._bits)).astype(np.int64)

    def find(self, keys: Keys) -> Ids:
        """The id of each key, 0 for a key never interned (read-only when all were known)."""
        n, known = self._recent.match(keys)
        if n == keys.size:
            return known
        return np.concatenate([known, self._lookup(keys[n:])])

    def _lookup(self, keys: Keys) -> Ids:
        out: Ids = np.zeros(keys.size, dtype=np.int64)
        mask = (1 << self._bits) - 1
        todo, bucket, want = np.arange(keys.size), self._home(keys), keys
        while todo.size:
            ids = self._ids[bucket]
            match = (self._keys[bucket] == want[:, None]) & (ids != 0)
            out[todo] = np.where(match, ids, 0).sum(axis=1)
            more = ~match.any(axis=1) & (ids[:, -1] != 0)  # not here, and the bucket overflowed
            todo, bucket, want = todo[more], (bucket[more] + 1) & mask, want[more]
        return out

    def intern(self, keys: Keys) -> Ids:
        """The id of each key, new ids for keys never seen (in order of first occurrence)."""
        ids = self.find(keys)
        new = ids == 0
        if not new.any():
            self._recent.remember(keys, ids)
            return ids
        fresh, first, inverse = np.unique(keys[new], return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # ids in order of first sight
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        assigned = self.size + 1 + rank
        self._reserve(self.size + fresh.size)
        self._insert(fresh, assigned)
        self.size += int(fresh.size)
        ids[new] = assigned[inverse]
        self._recent.remember(keys, ids)
        return ids

    def _reserve(self, size: int) -> None:
        bits = self._bits
        while size * 2 > WIDTH << bits:
            bits += 1
        if bits == self._bits:
            return
        used = self._ids != 0
        keys, ids = self._keys[used], self._ids[used].astype(np.int64)
        self._bits = bits
        self._keys = np.zeros((1 << bits, WIDTH), dtype=np.uint64)
        self._ids = np.zeros((1 << bits, WIDTH), dtype=np.int32)
        self._fill = np.zeros(1 << bits, dtype=np.int64)
        self._insert(keys, ids)

    def _insert(self, keys: Keys, ids: Ids) -> None:
        """Place distinct keys absent from the table: each takes the next free slot of its
        bucket, in batch order; what does not fit moves on to the next bucket."""
        mask = (1 << self._bits) - 1
        bucket = self._home(keys)
        while keys.size:
            order = np.argsort(bucket, kind="stable")
            keys, ids, bucket = keys[order], ids[order], bucket[order]
            rank = np.arange(bucket.size) - np.searchsorted(bucket, bucket)
            slot = self._fill[bucket] + rank
            fits = slot < WIDTH
            b, s = bucket[fits], slot[fits]
            self._keys[b, s] = keys[fits]
            self._ids[b, s] = ids[fits]
            self._fill[b] = np.maximum(self._fill[b], s + 1)
            left = ~fits
            keys, ids, bucket = keys[left], ids[left], (bucket[left] + 1) & mask
