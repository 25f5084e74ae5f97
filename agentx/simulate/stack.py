"""The two engines: a one-pass LRU stack simulation (every capacity at once) and a replay through
:class:`agentx.prefixcache.kvcache.KVCache` (one capacity per pass; the reference the first is tested against).

Both consume the same schedule (:func:`schedule`): requests in start order; before a request
starts, every running request whose end (start + recorded duration) is not later is released, in
end order. Without ``pin`` every request ends as it starts (requests in isolation).

**The stack engine** relies on LRU being a *stack algorithm* (Mattson et al., 1970): the blocks a
cache of ``C`` blocks holds are the top ``C`` of one recency order, whatever ``C`` is. Here the
order is vLLM's free-block queue: a finished request frees its blocks tail first, so its head is
the most recent. With pinning, a running request's blocks sit outside the queue and cannot be
evicted; if ``P`` blocks are pinned, the free blocks still cached are the top ``C - P`` of the
queue (or none when ``P >= C``: the cache is over-committed). So each looked-up block has a
capacity-free *depth*: ``-inf`` when pinned (a hit at any capacity), its position in the queue
when free, infinite when never seen; block ``i`` hits in a cache of ``C`` blocks iff the running
maximum of the depths up to ``i`` is below ``C - P`` (only a leading run hits; ``P`` is the same
for the whole lookup). One pass checks every request's running maxima against any set of
capacities by binary search. Queue positions come from a Fenwick tree over release timestamps,
updated with vectorised range operations, so a 100K-token request costs a few numpy calls, not
6K dictionary operations. An offload tier of ``O`` blocks is answered in the same pass (see
:func:`stack_simulate`).

Blocks that carry no prefix hash (the partial last prompt block, the output's blocks) are pinned
while the request runs and then join the queue as entries that never hit, as in vLLM, where
every freed block takes its place in the free queue. (:class:`~agentx.prefixcache.kvcache.KVCache` instead
frees them as holes that fill before anything is evicted; the engines agree exactly when
prompts are whole blocks and outputs are not reserved, which the tests check.)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.kvcache import Allocation, KVCache
from agentx.simulate.workload import SimRequest, Workload

Int64Array = npt.NDArray[np.int64]
INF_DEPTH = 1 << 62  # "never seen": a miss at any capacity


def schedule(workload: Workload, *, pin: bool) -> Iterator[tuple[bool, int]]:
    """``(starts, request index)`` events: a start, or the release of a running request."""
    running: list[tuple[int, int]] = []
    for i, r in enumerate(workload.requests):
        while running and running[0][0] <= r.start_ns:
            yield False, heapq.heappop(running)[1]
        yield True, i
        end = r.start_ns + (r.duration_ns or 0) if pin else r.start_ns
        heapq.heappush(running, (end, i))


def anonymous_blocks(r: SimRequest, block_size: int, reserve_output: bool) -> int:
    """Blocks a running request holds beyond its full prompt blocks (partial block, output)."""
    tokens = r.prompt_tokens + (r.output_tokens if reserve_output else 0)
    return max(0, -(-tokens // block_size) - r.block_count)


class Fenwick:
    """Counts over positions ``1..n`` with vectorised prefix sums and run updates.

    A node holds at most ``n``, so the tree is int32 below 2**31 positions. The stack engine
    sizes it to twice the entries that can be live at once (:func:`queue_slots`), not one slot
    per block of every request (91.5M for a 6e9-token corpus), and renumbers the live entries
    when the positions run out (:meth:`ones`).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        dtype = np.int32 if n < np.iinfo(np.int32).max else np.int64
        self.tree: npt.NDArray[np.signedinteger[Any]] = np.zeros(n + 1, dtype=dtype)

    @classmethod
    def ones(cls, n: int, live: int) -> Fenwick:
        """A tree of ``n`` positions whose first ``live`` hold 1."""
        fen = cls(n)
        fen.fill_ones(live)
        return fen

    def fill_ones(self, live: int) -> None:
        """Make the first ``live`` positions hold 1 and the others 0, in place: node
        ``i <= live`` covers ``(i - lowbit(i), i]``, all ones, so holds ``lowbit(i)``; above
        ``live`` only the nodes whose span reaches ``live`` (its update path, ``O(log n)`` of
        them) hold anything."""
        tree, n = self.tree, self.n
        live = max(0, min(live, n))
        tree[live + 1 :] = 0
        tree[0] = 0
        if not live:
            return
        i = tree[1 : live + 1]
        i[:] = np.arange(1, live + 1, dtype=tree.dtype)
        i &= -i
        k = live + (live & -live)
        while k <= n:
            tree[k] = live - (k - (k & -k))
            k += k & -k

    def prefix_at(self, p: int) -> int:
        """Sum over ``1..p`` (``0 <= p <= n``), for one position (no array calls)."""
        tree, total = self.tree, 0
        while p:
            total += int(tree[p])
            p &= p - 1
        return total

    def prefix(self, pos: Int64Array) -> Int64Array:
        """Sum over ``1..p`` for each ``p`` in ``pos`` (``0 <= p <= n``)."""
        tree = self.tree
        i = pos.astype(np.int64, copy=True)
        total = np.zeros(i.size, dtype=np.int64)
        while True:
            total += tree[i]
            i &= i - 1  # drop the lowest set bit; 0 stays 0 and tree[0] is 0
            if not i.any():
                return total

    def add_range(self, a: int, b: int, delta: int) -> None:
        """Add ``delta`` at every position ``a..b`` (inclusive)."""
        if b < a:
            return
        tree, n = self.tree, self.n
        j = np.arange(a, b + 1, dtype=np.int64)
        inc = j - np.maximum(j - (j & -j), a - 1)  # overlap of node j's span with [a, b]
        if delta != 1:
            inc *= delta
        tree[a : b + 1] += inc.astype(tree.dtype, copy=False)
        above: list[int] = []  # the nodes above b whose span reaches into [a, b] (distinct)
        incs: list[int] = []
        k = b + (b & -b)
        while k <= n:
            above.append(k)
            incs.append(delta * (b - max(k - (k & -k), a - 1)))
            k += k & -k
        if above:
            tree[above] += np.asarray(incs, dtype=tree.dtype)

    def add_points(self, pos: Int64Array, delta: int) -> None:
        """Add ``delta`` at each of ``pos`` (sorted, distinct), one run of neighbours at a time."""
        if pos.size == 0:
            return
        breaks = np.flatnonzero(np.diff(pos) != 1) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks, [pos.size])) - 1
        starts, ends = pos[first], pos[last]
        if starts.size <= 4:
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                self.add_range(a, b, delta)
            return
        run_start = np.repeat(starts, last - first + 1)
        inc = delta * (pos - np.maximum(pos - (pos & -pos), run_start - 1))
        self.tree[pos] += inc.astype(self.tree.dtype, copy=False)
        k, a, b = ends, starts, ends
        while True:
            k = k + (k & -k)
            keep = k <= self.n
            if not keep.any():
                return
            k, a, b = k[keep], a[keep], b[keep]
            inc = delta * (b - np.maximum(k - (k & -k), a - 1))
            np.add.at(self.tree, k, inc.astype(self.tree.dtype, copy=False))


def queue_slots(workload: Workload, anon: Sequence[int]) -> int:
    """Positions of the free queue's Fenwick tree: every release stamps its entries with the
    next positions, but at most every distinct block and every unnamed entry ever freed are
    live at once, so twice that (and room for the largest release) is enough, renumbering the
    live entries when the positions run out; never more than one per entry ever released."""
    total = sum(r.block_count for r in workload.requests) + sum(anon)
    largest = max(
        (r.block_count + a for r, a in zip(workload.requests, anon, strict=True)), default=0
    )
    return min(total, 2 * (workload.unique_blocks + sum(anon)) + largest)


def _renumbered(
    fen: Fenwick,
    live: npt.NDArray[np.int8],
    released_at: npt.NDArray[np.signedinteger[Any]],
    queued: int,
) -> None:
    """The free queue's live entries moved to positions ``1..queued``, in the same order (in
    place): a free block's new position is its rank among the live entries (so every depth is
    unchanged), and the unnamed entries between fill the positions in between. ``live`` marks
    the positions that hold an entry: one cumulative sum (into the tree, rebuilt after) ranks
    them all."""
    ranks = np.cumsum(live, dtype=fen.tree.dtype, out=fen.tree)
    free = np.flatnonzero(released_at)
    released_at[free] = ranks[released_at[free]]
    del free
    live[:] = 0
    live[1 : queued + 1] = 1
    fen.fill_ones(queued)


def _free_prefix(fen: Fenwick, stamps: Int64Array) -> Int64Array:
    """``fen.prefix(stamps)`` for positions that all hold a live entry, one tree read per run of
    stamps falling by one: every position between two stamps of such a run is a stamp of the
    run, live, so along it ``prefix(s) = prefix(last) + (s - last)``. A request's free blocks
    were mostly released together, head last, so their stamps form a few such runs."""
    s = stamps.astype(np.int64, copy=False)
    if not s.size:
        return s
    last = np.flatnonzero(s[1:] != s[:-1] - 1)  # the last element of each run but the final one
    if not last.size:  # one run (the usual case)
        end = int(s[-1])
        return s + (fen.prefix_at(end) - end)
    last = np.append(last, s.size - 1)
    offset = fen.prefix(s[last]) - s[last]
    return s + np.repeat(offset, np.diff(last, prepend=-1))


@dataclass(frozen=True, slots=True)
class StackResult:
    """Hit blocks of one stack pass at each capacity asked for (same order as ``capacities``).

    ``inclusive``/``exclusive`` are the GPU+offload hits for an offload tier of
    ``offload_blocks`` (write-through, resp. holding only what the GPU does not); both are
    ``None`` without an offload tier.
    """

    capacities_blocks: tuple[int, ...]
    gpu_hit_blocks: tuple[int, ...]
    offload_blocks: int
    inclusive_hit_blocks: tuple[int, ...] | None
    exclusive_hit_blocks: tuple[int, ...] | None
    prompt_tokens: int
    theoretical_hit_blocks: int  # unbounded cache
    blocks_for_theoretical: int  # the smallest GPU capacity (blocks) reaching it
    peak_pinned_blocks: int


def stack_simulate(
    workload: Workload,
    capacities_blocks: Sequence[int],
    offload_blocks: int = 0,
    *,
    pin: bool = True,
    reserve_output: bool = True,
) -> StackResult:
    """Hit blocks at every capacity in one pass (see the module docstring).

    Per lookup, with ``P`` blocks pinned by other requests, a free block at queue depth ``d``
    is a GPU hit iff ``d < C - P``; with an offload tier of ``O`` blocks, a write-through
    (inclusive) tier adds the top ``O - P`` of the queue (so: ``d < max(C, O) - P``) and an
    exclusive one the ``O`` blocks after the GPU's (``d < max(C - P, 0) + O``).
    """
    reqs = workload.requests
    bs = workload.block_size
    anon = [anonymous_blocks(r, bs, reserve_output) for r in reqs]
    slots = queue_slots(workload, anon)
    fen = Fenwick(slots)
    live = np.zeros(slots + 1, dtype=np.int8)  # positions holding an entry (for renumbering)
    refcount = np.zeros(workload.unique_blocks, dtype=np.int32)  # running requests holding it
    # its free-queue position (0: pinned or never seen), as wide as the tree's positions
    released_at = np.zeros(workload.unique_blocks, dtype=fen.tree.dtype)
    caps = np.asarray(capacities_blocks, dtype=np.int64)
    gpu = np.zeros(caps.size, dtype=np.int64)
    incl = np.zeros(caps.size, dtype=np.int64)
    excl = np.zeros(caps.size, dtype=np.int64)
    incl_caps = np.maximum(caps, offload_blocks)
    theoretical = 0
    deepest = -1
    clock = 0  # last release timestamp used
    queued = 0  # entries in the free queue (named and anonymous)
    pinned = 0
    peak = 0
    held: dict[int, npt.NDArray[np.int64]] = {}  # running requests' ids, rebuilt once
    for starts, i in schedule(workload, pin=pin):
        r = reqs[i]
        ids = held.pop(i) if not starts else r.blocks
        if not starts:  # release: unnamed blocks first (the deepest), then the tail, the head
            rc = refcount[ids] - 1
            refcount[ids] = rc
            freed = ids[rc == 0]
            m = anon[i] + int(freed.size)
            if m:
                if clock + m > fen.n:  # out of positions: the live entries renumbered 1..queued
                    _renumbered(fen, live, released_at, queued)
                    clock = queued
                fen.add_range(clock + 1, clock + m, 1)
                live[clock + 1 : clock + m + 1] = 1
                released_at[freed] = clock + m - np.arange(freed.size, dtype=np.int64)
                clock += m
                queued += m
            pinned -= m
            continue
        h = min(hittable_blocks(r.prompt_tokens, bs), int(ids.size))
        if ids.size:  # one read of each block's state serves the lookup and the pinning
            rc = refcount[ids]
            rel = released_at[ids]
        if h:
            depth = np.full(h, INF_DEPTH, dtype=np.int64)
            rel_head = rel[:h]
            free = rel_head > 0
            if free.any():
                depth[free] = queued - _free_prefix(fen, rel_head[free])
            depth[rc[:h] > 0] = -INF_DEPTH  # pinned: a hit whatever the capacity
            run = np.maximum.accumulate(depth)
            gpu += np.searchsorted(run, caps - pinned, side="left")
            if offload_blocks:
                incl += np.searchsorted(run, incl_caps - pinned, side="left")
                excl += np.searchsorted(
                    run, np.maximum(caps - pinned, 0) + offload_blocks, side="left"
                )
            seen = int(np.searchsorted(run, INF_DEPTH, side="left"))
            theoretical += seen
            if seen:
                deepest = max(deepest, pinned + int(run[seen - 1]))
        if ids.size:  # a free block has refcount 0, a pinned or unseen one no stamp
            in_queue = rel > 0
            out = np.sort(rel[in_queue])
            fen.add_points(out, -1)
            live[out] = 0
            queued -= int(out.size)
            released_at[ids[in_queue]] = 0
            refcount[ids] = rc + 1
            pinned += int(np.count_nonzero(rc == 0))
        pinned += anon[i]
        peak = max(peak, pinned)
        held[i] = ids
    return StackResult(
        capacities_blocks=tuple(caps.tolist()),
        gpu_hit_blocks=tuple(gpu.tolist()),
        offload_blocks=offload_blocks,
        inclusive_hit_blocks=tuple(incl.tolist()) if offload_blocks else None,
        exclusive_hit_blocks=tuple(excl.tolist()) if offload_blocks else None,
        prompt_tokens=workload.prompt_tokens,
        theoretical_hit_blocks=theoretical,
        blocks_for_theoretical=deepest + 1,
        peak_pinned_blocks=peak,
    )


@dataclass(frozen=True, slots=True)
class CacheResult:
    """Token counters of one :class:`KVCache` replay."""

    prompt_tokens: int
    gpu_hit_tokens: int
    offload_hit_tokens: int


def kvcache_simulate(
    workload: Workload,
    capacity_tokens: int,
    offload_tokens: int = 0,
    *,
    pin: bool = True,
    reserve_output: bool = True,
) -> CacheResult:
    """Replay the schedule through serve-sim's :class:`KVCache` (its victim offload tier)."""
    cache = KVCache(capacity_tokens, workload.block_size, offload_tokens)
    reqs = workload.requests
    running: dict[int, Allocation] = {}
    for starts, i in schedule(workload, pin=pin):
        if not starts:
            cache.release(running.pop(i))
            continue
        r = reqs[i]
        extra = r.output_tokens if reserve_output else 0
        running[i] = cache.allocate(r.blocks, r.prompt_tokens, extra_tokens=extra)
    c = cache.counters
    return CacheResult(c.queries_tokens, c.gpu_hit_tokens, c.offload_hit_tokens)
