"""Agent chains in a Weka thread's requests, from their block ids alone.

Ported from agentx-harness 1.0.12 (``aiperf/dataset/loader/weka_agent_chains.py``, NVIDIA,
Apache-2.0): the same rules, the same tie-breaks, so a trace splits exactly as the harness splits
it. :mod:`agentx.formats.weka.flat` names and classifies the chains found here.

Parallel agents are often recorded *flat*: their requests interleaved among the main agent's, in
one list. Each request is put on a chain, in ``(t, position)`` order:

- it **extends** the chain whose last request's block ids are a complete prefix of its own, that
  had ended by its start and ran on the same model (the deepest such prefix; ties: the lowest
  chain);
- otherwise it **forks** a new chain off the chain sharing the longest prefix with it (ties: the
  longer tail, then the lowest chain), or off nothing;
- a request without block ids stays on the first chain, unseen by the others.

Then **seams**: a fork off a request that stayed its chain's last one (the longer state was never
extended again) is the same agent continuing after a context edit (a compaction, re-hashed
trailing blocks): among the forks of that request that start after it ended, on its model, the
deepest (ties: the earliest, then the lowest chain) is spliced back onto the chain, unless it
started more than ``seam_max_gap_s`` after the tail ended *and* kept less than
``seam_min_overlap`` of it (a distinct session reusing a base prefix). The forks of the spliced
request are then measured against the chain's new last request. Every other fork is a spawned
agent.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

EPSILON_S = 1e-6  # the harness's tolerance on "had ended by its start"
SEAM_MAX_GAP_S = 3600.0  # the harness's WEKA_SEAM_MAX_GAP_SECONDS
SEAM_MIN_OVERLAP = 0.5  # ... WEKA_SEAM_MIN_OVERLAP_RATIO

Ids = npt.NDArray[np.int64]
_NO_IDS: Ids = np.empty(0, np.int64)


@dataclass(frozen=True, slots=True)
class ChainRequest:
    """What the detection reads of a request: its position in its list (the tie-break), start
    and server time in seconds, model, token counts and block ids (:func:`block_ids`)."""

    position: int
    t: float
    api_time: float | None
    model: str | None
    n_in: int
    n_out: int
    ids: Ids

    @property
    def end(self) -> float:
        """Start plus server time; a missing, negative or non-finite time counts as 0."""
        api = self.api_time if self.api_time is not None and math.isfinite(self.api_time) else 0.0
        return self.t + max(api, 0.0)


@dataclass(slots=True)
class Fork:
    """Where a chain split off another: ``parent`` (``None``: shared nothing), the position of
    the request it forked off, the blocks it shared with it, its first request's start."""

    parent: int | None
    position: int | None
    depth: int
    t: float


@dataclass(slots=True)
class Chain:
    """One agent: its requests in order, how it began (``None``: the first chain), the chain it
    was spliced into as a seam, and its last hash-bearing request (while chains are built)."""

    requests: list[ChainRequest] = field(default_factory=list)
    fork: Fork | None = None
    spliced_into: int | None = None
    tail_position: int = -1
    tail_ids: Ids = field(default_factory=lambda: _NO_IDS)
    tail_end: float = 0.0
    tail_model: str | None = ""


@dataclass(frozen=True, slots=True)
class Detection:
    """The chains (spliced ones included), the main one (the chain of the first request), the
    live others ordered by their first request, the seams spliced and the requests without block
    ids kept on the first chain."""

    chains: list[Chain]
    main: int
    workers: list[int]
    seams: int
    empty: int


def _lcp(a: Ids, b: Ids) -> int:
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return 0
    neq = a[:n] != b[:n]
    i = int(neq.argmax())
    return i if neq[i] else n


def block_ids(ids: Sequence[int]) -> Ids:
    """A request's block ids as the detection compares them."""
    return np.asarray(ids, dtype=np.int64)


class _Builder:
    """Phase 1: every request on a chain, forking on every shrink."""

    def __init__(self) -> None:
        self.chains: list[Chain] = []
        self.chain_of: dict[int, int] = {}  # request position -> chain
        self.forks_of: dict[int, list[int]] = {}  # request position -> chains forked off it
        self.by_position: dict[int, ChainRequest] = {}
        self.empty = 0

    def _append(self, c: int, r: ChainRequest) -> None:
        chain = self.chains[c]
        chain.requests.append(r)
        self.chain_of[r.position] = c
        if r.ids.shape[0]:
            chain.tail_position = r.position
            chain.tail_ids = r.ids
            chain.tail_end = r.end
            chain.tail_model = r.model

    def add(self, r: ChainRequest) -> None:
        self.by_position[r.position] = r
        if not r.ids.shape[0]:  # no evidence: on the first chain, never a tail or a fork point
            self.empty += 1
            if not self.chains:
                self.chains.append(Chain())
            self.chains[0].requests.append(r)
            self.chain_of[r.position] = 0
            return
        h = r.ids
        if not self.chains:
            self.chains.append(Chain())
            self._append(0, r)
            return
        target = self._extended(h, r.t, r.model)
        if target is not None:
            self._append(target, r)
            return
        parent, depth = self._deepest(h)
        if parent is None and all(c.tail_ids.shape[0] == 0 for c in self.chains):
            self._append(0, r)  # the first hash-bearing request is the main agent's
            return
        position = self.chains[parent].tail_position if parent is not None else None
        new = len(self.chains)
        self.chains.append(Chain(fork=Fork(parent, position, depth, r.t)))
        self._append(new, r)
        if position is not None and depth > 0:
            self.forks_of.setdefault(position, []).append(new)

    def _extended(self, h: Ids, t: float, model: str | None) -> int | None:
        """The chain whose tail is a complete prefix of ``h``, ended by ``t``, same model:
        the deepest (ties: the lowest index)."""
        best: int | None = None
        best_len = -1
        n = h.shape[0]
        for i, c in enumerate(self.chains):
            tl = c.tail_ids.shape[0]
            if tl == 0 or tl > n or tl <= best_len or c.tail_model != model:
                continue
            if c.tail_end > t + EPSILON_S or c.tail_ids[tl - 1] != h[tl - 1]:
                continue
            if bool((h[:tl] == c.tail_ids).all()):
                best, best_len = i, tl
        return best

    def _deepest(self, h: Ids) -> tuple[int | None, int]:
        """The tail sharing the longest prefix with ``h`` (ties: the longer tail, then the
        lowest index); ``(None, 0)`` when none shares any."""
        best: int | None = None
        best_key = (0, 0)
        for i, c in enumerate(self.chains):
            if c.tail_ids.shape[0] == 0:
                continue
            d = _lcp(c.tail_ids, h)
            if d == 0:
                continue
            key = (d, c.tail_ids.shape[0])
            if key > best_key:
                best, best_key = i, key
        return best, best_key[0]


def detect(
    requests: Sequence[ChainRequest],
    *,
    seam_max_gap_s: float = SEAM_MAX_GAP_S,
    seam_min_overlap: float = SEAM_MIN_OVERLAP,
) -> Detection:
    """The chains of ``requests`` (any order: they are taken by ``(t, position)``)."""
    if not requests:
        return Detection([], 0, [], 0, 0)
    ordered = sorted(requests, key=lambda r: (r.t, r.position))
    b = _Builder()
    for r in ordered:
        b.add(r)
    chains = b.chains
    seams = _splice_seams(b, seam_max_gap_s, seam_min_overlap)
    alias = {i: c.spliced_into for i, c in enumerate(chains) if c.spliced_into is not None}

    def live(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    for c in chains:
        if c.spliced_into is None and c.fork is not None and c.fork.parent is not None:
            c.fork.parent = live(c.fork.parent)
    main = live(b.chain_of[ordered[0].position])
    workers = [i for i, c in enumerate(chains) if c.spliced_into is None and i != main]
    workers.sort(key=lambda i: (chains[i].requests[0].t, chains[i].requests[0].position))
    return Detection(chains, main, workers, seams, b.empty)


def _last_with_ids(chain: Chain) -> int | None:
    """The position of the chain's last hash-bearing request (rows without ids are unseen)."""
    for r in reversed(chain.requests):
        if r.ids.shape[0]:
            return r.position
    return None


def _elect(
    chains: list[Chain], forks: list[int], tail: ChainRequest, max_gap_s: float, min_overlap: float
) -> int | None:
    """The seam continuation among the forks off a dead tail: positive depth, starting after
    the tail ended, same model, not a distant low-overlap session; the deepest (ties: the
    earliest, then the lowest index)."""
    end = tail.end
    blocks = tail.ids.shape[0]

    def blocked(c: Chain, fork: Fork) -> bool:
        if blocks == 0:
            return False
        gap = c.requests[0].t - end
        return gap > max_gap_s and fork.depth / blocks < min_overlap

    best: int | None = None
    best_key: tuple[int, float, int] | None = None
    for i in forks:
        c = chains[i]
        fork = c.fork
        if fork is None or fork.depth <= 0 or end > c.requests[0].t + EPSILON_S:
            continue
        if c.requests[0].model != tail.model or blocked(c, fork):
            continue
        key = (fork.depth, -fork.t, -i)
        if best_key is None or key > best_key:
            best, best_key = i, key
    return best


def _splice_seams(b: _Builder, max_gap_s: float, min_overlap: float) -> int:
    """Phase 2: splice each dead tail's elected continuation back onto its chain; re-key the
    tail's other forks to the chain's new last request (they may be its seams in turn)."""
    chains = b.chains
    alias: dict[int, int] = {}

    def live(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    seams = 0
    keys = sorted(b.forks_of)
    heapq.heapify(keys)
    done: set[int] = set()
    while keys:
        position = heapq.heappop(keys)
        if position in done:
            continue
        done.add(position)
        owner = live(b.chain_of[position])
        owner_chain = chains[owner]
        if _last_with_ids(owner_chain) != position:
            continue  # the longer state went on: every fork off it is a spawn
        forks = [i for i in b.forks_of[position] if chains[i].spliced_into is None]
        elected = _elect(chains, forks, b.by_position[position], max_gap_s, min_overlap)
        if elected is None:
            continue
        target = chains[elected]
        owner_chain.requests.extend(target.requests)
        for r in target.requests:
            b.chain_of[r.position] = owner
        target.spliced_into = owner
        alias[elected] = owner
        seams += 1
        new_tail = _last_with_ids(owner_chain)
        if new_tail is None:
            continue
        if _rekey(b, forks, elected, owner, new_tail):
            done.discard(new_tail)  # its key may be below this one, or already seen
            heapq.heappush(keys, new_tail)
    return seams


def _rekey(b: _Builder, forks: list[int], elected: int, owner: int, new_tail: int) -> bool:
    """Measure the forks off a consumed tail against the chain's new last request; True when
    one was moved there."""
    tail_ids = b.by_position[new_tail].ids
    moved = False
    for i in forks:
        c = b.chains[i]
        if i == elected or c.spliced_into is not None or c.fork is None:
            continue
        d = _lcp(tail_ids, c.requests[0].ids)
        if d <= 0:
            continue
        c.fork.position = new_tail
        c.fork.depth = d
        c.fork.parent = owner
        b.forks_of.setdefault(new_tail, []).append(i)
        moved = True
    return moved


# -- worker groups ---------------------------------------------------------------------------------


def _components(
    cands: list[tuple[float, float, int, int]],
) -> list[list[tuple[float, float, int, int]]]:
    """Connected components of overlapping ``[t0, t1)`` intervals (touching ones do not
    overlap): a sweep in start order with a union-find."""
    if not cands:
        return []
    order = sorted(range(len(cands)), key=lambda i: (cands[i][0], cands[i][2]))
    parent = list(range(len(cands)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    active: list[tuple[float, int]] = []  # (t1, index), a min-heap
    for i in order:
        t0 = cands[i][0]
        while active and active[0][0] <= t0:
            heapq.heappop(active)
        if active:
            parent[find(i)] = find(active[0][1])
        heapq.heappush(active, (cands[i][1], i))
    comps: dict[int, list[tuple[float, float, int, int]]] = {}
    for i in range(len(cands)):
        comps.setdefault(find(i), []).append(cands[i])
    return list(comps.values())


def worker_groups(d: Detection, *, group_min: int) -> dict[int, tuple[int, int]]:
    """``{chain: (group, member)}`` of the workers that forked off one request with shared
    context and ran concurrently, in groups of at least ``group_min``: groups numbered by their
    earliest start, members by ``(start, position)``."""
    if group_min <= 0:
        return {}
    buckets: dict[tuple[int, int], list[tuple[float, float, int, int]]] = {}
    for i in d.workers:
        c = d.chains[i]
        fork = c.fork
        if fork is None or fork.depth <= 0 or fork.parent is None or fork.position is None:
            continue
        if not c.requests:
            continue
        t0 = c.requests[0].t
        t1 = max(r.end for r in c.requests)
        buckets.setdefault((fork.parent, fork.position), []).append(
            (t0, t1, c.requests[0].position, i)
        )
    comps = [comp for cands in buckets.values() for comp in _components(cands)]
    groups = [comp for comp in comps if len(comp) >= group_min]
    groups.sort(key=lambda comp: min((c[0], c[2]) for c in comp))
    out: dict[int, tuple[int, int]] = {}
    for g, comp in enumerate(groups):
        comp.sort(key=lambda c: (c[0], c[2]))
        for m, (_, _, _, i) in enumerate(comp):
            out[i] = (g, m)
    return out
