"""The theoretical prefix cache of several shards' requests, replayed as if they had shared one.

A run keeps, per request sent (in send order), what its unbounded cache served (``hit_tokens``)
and the chained block hashes the request added (:class:`TheoryRow`, ``theory.parquet``).
:func:`union_theory` interleaves the shards' rows by send time and replays one cache over all of
them. It is exact, with no full prompt stored:

- within a shard the rows keep their order, so when a request comes up, every request its shard
  sent before it has been replayed: its first ``hit_tokens`` blocks are in the shared cache;
- the blocks past them are its ``new_blocks``, so the shared cache's hit is the largest ``k``
  (capped, as vLLM does, at ``floor((prompt_tokens - 1) / block_size)`` blocks) such that
  block ``k - 1`` is in the cache (presence is monotone along a chain: a chained hash brings
  its whole prefix), found by binary search over ``new_blocks``;
- the request then adds the blocks past that hit.

So the union's hit of each request equals a single unbounded cache's over the interleaved
order. When no block can be shared across shards (disjoint sessions whose cache-bust marker
precedes everything they send), no shard's new block is found in another's, and the union's hit
rate is exactly the token-weighted combination of the shards' per-request hits. When trees share
a prefix before their marker (a system prompt: the harness's ``first_turn_prefix`` marker and
agentx's ``--salt`` both mark the first user message), each shard paid for that prefix once and
the union pays once: the combination undercounts and only this replay is exact.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.prefix import BlockSet, hittable_blocks


@dataclass(frozen=True, slots=True)
class TheoryRow:
    """What one request sent did to its run's unbounded prefix cache."""

    request_id: str
    sent_ns: int  # on its run's clock
    prompt_tokens: int  # agentx's own count of what was sent
    hit_tokens: int  # what the cache served: a whole number of blocks
    new_blocks: npt.NDArray[np.uint64]  # chained hashes of blocks hit_tokens // block_size, ...


def union_theory(
    shards: Sequence[tuple[Iterable[TheoryRow], int]], block_size: int
) -> Iterator[TheoryRow]:
    """The rows of every shard against one shared cache, in send order.

    ``shards`` holds each shard's rows (in its own send order) and the offset that moves its
    ``sent_ns`` onto the common clock. The rows yielded carry the common-clock ``sent_ns``, the
    shared cache's ``hit_tokens`` and the blocks they added to it (so a merge of merges is
    exact too).
    """
    seen = BlockSet()

    def timed(rows: Iterable[TheoryRow], offset: int) -> Iterator[tuple[int, TheoryRow]]:
        for r in rows:
            yield r.sent_ns + offset, r

    merged = heapq.merge(*(timed(rows, off) for rows, off in shards), key=lambda p: p[0])
    for sent_ns, row in merged:
        base = row.hit_tokens // block_size
        new = row.new_blocks
        lo, hi = 0, max(0, min(hittable_blocks(row.prompt_tokens, block_size) - base, new.size))
        while lo < hi:  # largest k with new[k - 1] in the shared cache
            mid = (lo + hi + 1) // 2
            if int(new[mid - 1]) in seen:
                lo = mid
            else:
                hi = mid - 1
        added = new[lo:]
        if added.size:
            seen.update(added.tolist())
        yield TheoryRow(row.request_id, sent_ns, row.prompt_tokens, (base + lo) * block_size, added)
