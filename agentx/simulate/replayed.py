"""The engine model in virtual time, fed the requests replay would send: the prediction of what
a server with a given KV capacity serves from its prefix cache under a given replay.

Each request is built exactly as replay builds it (:mod:`agentx.workload.build`: the API
conversion, the salt, ``max_tokens``), counted by the chosen tokenizer (the server's, ideally),
and submitted to :class:`agentx.prefixcache.engine.ServingEngine` when the schedule says it is sent. The
engine admits it (FCFS, when its prompt fits), looks the cache up at admission, prefills it on
its one lane and decodes at the modelled speed; when it finishes, the schedule releases what
waited for it. The loop is a discrete-event simulation: no sleeping, seconds of compute for
hours of replay.

Sends come from :class:`agentx.simulate.schedule.SharedSchedule` (replay's own schedule)
or, for ``--from-results``, from a real run's recorded send times (:class:`RecordedSends`).

With a router (``--replicas N --route P``) there are N engines, each with its own KV cache of
the capacity given, admission queue and decode speed; every request goes to the replica the
policy (:mod:`agentx.routing`, replay's own) picks when it is sent, and the theoretical cache of
each replica (fed only what was routed to it) is kept beside the shared one.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agentx.core.record import RequestRecord
from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.engine import Admission, EngineParams, ServingEngine
from agentx.prefixcache.kvcache import KVCache
from agentx.prefixcache.kvcache.cache import Counts, leading_run
from agentx.prefixcache.kvcache.unbounded import UnboundedKVCache
from agentx.prefixcache.theory import HitRateMeter
from agentx.routing import Router, RouteRequest
from agentx.simulate.prompts import Prompt, PromptSource
from agentx.simulate.reach import ReachCache
from agentx.simulate.runs import BlockIds
from agentx.simulate.schedule import Send
from agentx.workload.plan import SessionPlan


class Sends(Protocol):
    """What decides when requests are sent (the driving contract of replay's schedule)."""

    def start(self, now: float) -> None: ...
    def next_due_s(self) -> float | None: ...
    def poll(self, now: float) -> list[Send]: ...
    def complete(self, send: Send, now: float) -> None: ...


@dataclass(frozen=True, slots=True)
class SimRecord:
    """One simulated request (times in seconds from the start of the run)."""

    seq: int
    lane: int
    session_id: str
    thread_id: str
    turn: int
    warmup: bool
    sent_s: float
    admitted_s: float
    first_token_s: float
    end_s: float
    prompt_tokens: int
    output_tokens: int
    gpu_hit_tokens: int
    offload_hit_tokens: int
    theoretical_hit_tokens: int
    replica: int = 0  # the engine that served it (0: the only one)
    replica_theoretical_hit_tokens: int | None = None  # routed: its replica's unbounded cache

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.sent_s

    @property
    def cached_tokens(self) -> int:
        return self.gpu_hit_tokens + self.offload_hit_tokens


@dataclass(slots=True)
class RunTotals:
    """A run's sums over its records, kept as they finish: all a capacity's point and the
    summary read when the records themselves are not kept (~0.4 KB a request each pass)."""

    requests: int = 0  # every request, warm-up included
    warmup_requests: int = 0
    prompt_tokens: int = 0  # the measured requests' (not warm-up), as the rates below
    gpu_hit_tokens: int = 0
    offload_hit_tokens: int = 0
    theoretical_hit_tokens: int = 0
    largest_tokens: int = 0  # the most prompt + output tokens of a request, warm-up included

    def add(self, r: SimRecord) -> None:
        self.count(
            r.warmup,
            r.prompt_tokens,
            r.output_tokens,
            r.gpu_hit_tokens,
            r.offload_hit_tokens,
            r.theoretical_hit_tokens,
        )

    def count(
        self,
        warmup: bool,
        prompt_tokens: int,
        output_tokens: int,
        gpu_hit_tokens: int,
        offload_hit_tokens: int,
        theoretical_hit_tokens: int,
    ) -> None:
        """A finished request's figures (:meth:`add` of a record, without the record)."""
        self.requests += 1
        self.largest_tokens = max(self.largest_tokens, prompt_tokens + output_tokens)
        if warmup:
            self.warmup_requests += 1
            return
        self.prompt_tokens += prompt_tokens
        self.gpu_hit_tokens += gpu_hit_tokens
        self.offload_hit_tokens += offload_hit_tokens
        self.theoretical_hit_tokens += theoretical_hit_tokens

    def rate(self, tokens: int) -> float | None:
        """``tokens`` over the measured prompt tokens (None without any)."""
        return tokens / self.prompt_tokens if self.prompt_tokens else None


@dataclass(slots=True)
class EngineRun:
    records: list[SimRecord]  # empty when the run kept none (``keep_records=False``)
    duration_s: float
    peak_waiting: int
    evicted_blocks: int
    named_blocks: int  # distinct blocks cached at the end (every one sent, when unbounded)
    refilled_blocks: int  # blocks computed again after their eviction
    kv_waits: int  # times a request waited for KV room
    named_among_newest: Counts | None = None  # KVCache.named_among_newest
    replicas: int = 1  # engines the requests were routed over (their figures are summed)
    exact_from_blocks: int | None = None  # unbounded, one engine: ReachCache.exact_from_blocks
    totals: RunTotals = field(default_factory=RunTotals)

    @property
    def as_unbounded(self) -> bool:
        """Nothing was evicted that was asked for again and nobody waited for KV room: every
        request got the hits, and so the timeline, of an unbounded cache."""
        return self.refilled_blocks == 0 and self.kv_waits == 0

    def _measured(self) -> list[SimRecord]:
        return [r for r in self.records if not r.warmup]

    def rate(self, tokens: Callable[[SimRecord], int]) -> float | None:
        rows = self._measured()
        prompt = sum(r.prompt_tokens for r in rows)
        return sum(tokens(r) for r in rows) / prompt if prompt else None


class SeenIds:
    """The unbounded (theoretical) cache over dense block ids: one flag per id. A request hits
    the leading run of its hittable blocks already seen, then all its blocks are seen. This is
    :class:`agentx.prefixcache.cache.UnboundedPrefixCache`'s answer: an id names its block's
    whole prefix (the ids renumber chained hashes), so presence along a chain is monotone and
    that cache's binary search finds the same run."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._seen: npt.NDArray[np.bool_] = np.zeros(1 << 16, dtype=bool)

    def observe(self, ids: BlockIds, prompt_tokens: int, top: int | None = None) -> int:
        """The request's hit tokens; then its blocks are cached (``top``: the largest id, when
        the caller knows it)."""
        if not ids.size:
            return 0
        if top is None:
            top = int(ids.max())
        if top >= self._seen.size:
            grown = np.zeros(max(top + 1, 2 * self._seen.size), dtype=bool)
            grown[: self._seen.size] = self._seen
            self._seen = grown
        limit = min(hittable_blocks(prompt_tokens, self.block_size), int(ids.size))
        hit = leading_run(self._seen[ids[:limit]])
        self._seen[ids] = True
        return hit * self.block_size


@dataclass(slots=True, eq=False)
class _Live:
    send: Send
    prompt: Prompt
    theoretical: int
    replica: int = 0
    replica_theoretical: int | None = None
    route: RouteRequest | None = None  # what the router was told (None: no router)
    admission: Admission | None = None


@dataclass(slots=True)
class _Decode:
    """All running sequences decode at one speed, so one 'tokens per sequence' clock orders
    every finish: a request that starts decoding at clock ``d`` with ``n`` tokens left ends when
    the clock reaches ``d + n``."""

    clock: float = 0.0
    at_s: float = 0.0
    heap: list[tuple[float, int, _Live]] = field(default_factory=list)

    def advance(self, now: float, itl_s: float) -> None:
        if now > self.at_s:
            self.clock += (now - self.at_s) / itl_s
            self.at_s = now

    def next_end(self, itl_s: float) -> float:
        if not self.heap:
            return math.inf
        return self.at_s + max(0.0, self.heap[0][0] - self.clock) * itl_s


@dataclass(slots=True, eq=False)
class _ReplicaState:
    """One replica: its engine and its decode clock."""

    engine: ServingEngine
    decode: _Decode = field(default_factory=_Decode)


def run_engine(
    sends: Sends,
    source: PromptSource,
    params: EngineParams,
    progress: Callable[[], None] | None = None,
    *,
    keep_order: bool = False,
    router: Router | None = None,
    theory: bool = True,
    unbounded: bool = False,
    keep_records: bool = True,
) -> EngineRun:
    """Drive the engine with ``sends`` in virtual time; every request's fate. ``progress`` is
    called as each request finishes; ``keep_order`` keeps the final free queue's make-up
    (:attr:`EngineRun.named_among_newest`, one engine only). ``router``: one engine per
    replica, each request sent where it picks. ``theory=False`` leaves the unbounded
    caches out (a capacity's pass: the unbounded one measured them; routed passes need
    them). ``unbounded``: the engines' caches never evict (:class:`UnboundedKVCache`, the
    same figures as a ``KVCache`` of ``params.kv_tokens`` that never fills, without its LRU
    queue). ``keep_records=False``: only :attr:`EngineRun.totals` is kept of the records."""

    def cache() -> KVCache:
        if unbounded:
            return UnboundedKVCache(params.block_size) if router else ReachCache(params.block_size)
        bounded = KVCache(
            params.kv_tokens, params.block_size, params.offload_tokens, dense_ids=True
        )
        bounded.reserve(source.distinct_blocks)  # an earlier pass numbered them: no growing
        return bounded

    engines = [
        _ReplicaState(ServingEngine(params, dense_ids=True, cache=cache()))
        for _ in range(router.replicas if router else 1)
    ]
    # one engine: the unbounded cache over dense ids is a flag per id; routed: per replica too
    meter = HitRateMeter(params.block_size) if router is not None else None
    seen = SeenIds(params.block_size) if theory and router is None else None
    tie = itertools.count()
    firsts: list[tuple[float, int, _Live]] = []  # first token due
    records: list[SimRecord] = []
    totals = RunTotals()
    peak_waiting = 0
    now = 0.0
    sends.start(now)
    fast = params.fast
    pending: dict[int, _Live] = {}

    def admit(rep: _ReplicaState, at: float) -> None:
        for ticket in rep.engine.schedule(at):
            live = pending.pop(id(ticket))
            assert ticket.admission is not None
            live.admission = ticket.admission
            heapq.heappush(firsts, (ticket.admission.first_token_s, next(tie), live))

    def done(live: _Live) -> None:
        rep = engines[live.replica]
        if keep_records:
            record = _finish(live, now, rep.engine, sends)
            totals.add(record)
            records.append(record)
        else:  # the totals alone: no record built
            adm = live.admission
            assert adm is not None
            rep.engine.finish(adm)
            sends.complete(live.send, now)
            alloc = adm.allocation
            totals.count(
                live.send.warmup,
                alloc.prompt_tokens,
                live.prompt.output_tokens,
                alloc.gpu_hit_tokens,
                alloc.offload_hit_tokens,
                live.theoretical,
            )
        if router is not None and live.route is not None:
            router.finished(live.replica, live.route)
        if progress is not None:
            progress()
        admit(rep, now)

    one = engines[0] if len(engines) == 1 else None  # (no list of speeds per event)
    itl, itls = 0.0, [0.0]
    while True:
        t_send = sends.next_due_s()
        t_first = firsts[0][0] if firsts else math.inf
        ending, t_end = 0, math.inf
        if fast:
            pass
        elif one is not None:
            itl = one.engine.itl_s()
            t_end = one.decode.next_end(itl)
        else:
            itls = [rep.engine.itl_s() for rep in engines]
            for i, rep in enumerate(engines):
                at = rep.decode.next_end(itls[i])
                if at < t_end:
                    ending, t_end = i, at
        t = min(t_send if t_send is not None else math.inf, t_first, t_end)
        if t == math.inf:
            break
        if fast:
            pass
        elif one is not None:
            one.decode.advance(t, itl)
        else:
            for i, rep in enumerate(engines):
                rep.decode.advance(t, itls[i])
        now = max(now, t)
        if t == t_end and engines[ending].decode.heap:
            _, _, live = heapq.heappop(engines[ending].decode.heap)
            done(live)
        elif t == t_first:
            _, _, live = heapq.heappop(firsts)
            left = live.prompt.output_tokens - 1
            if fast or left <= 0:
                done(live)
            else:
                decode = engines[live.replica].decode
                heapq.heappush(decode.heap, (decode.clock + left, next(tie), live))
        else:
            for send in sends.poll(now):
                prompt = source.prompt(send)
                blocks, request = prompt.request()  # rebuilt from its runs once per send
                if router is None or meter is None:
                    hit = 0
                    if seen is not None:
                        hit = seen.observe(blocks, prompt.prompt_tokens, prompt.top)
                    live = _Live(send, prompt, hit)
                else:
                    names = blocks.astype(np.uint64)
                    route = RouteRequest(send.session_id, prompt.prompt_tokens, names)
                    replica = router.route_one(route)
                    shared, own = meter.observe_routed(names, prompt.prompt_tokens, replica)
                    live = _Live(send, prompt, shared.hit_tokens, replica, own.hit_tokens, route)
                rep = engines[live.replica]
                ticket = rep.engine.submit(request, prompt.prompt_tokens, prompt.output_tokens, now)
                pending[id(ticket)] = live
                admit(rep, now)
            waiting = (
                one.engine.waiting
                if one is not None
                else sum(rep.engine.waiting for rep in engines)
            )
            peak_waiting = max(peak_waiting, waiting)
    seen = None  # (its flags are dropped before the final queue's make-up is counted)
    caches = [rep.engine.cache for rep in engines]
    return EngineRun(
        records,
        now,
        peak_waiting,
        sum(c.counters.evicted_blocks for c in caches),
        sum(c.named_blocks for c in caches),
        sum(c.counters.refilled_blocks for c in caches),
        sum(rep.engine.kv_waits for rep in engines),
        caches[0].named_among_newest(last=True) if keep_order and len(caches) == 1 else None,
        len(engines),
        caches[0].exact_from_blocks if isinstance(caches[0], ReachCache) else None,
        totals,
    )


def _finish(live: _Live, now: float, engine: ServingEngine, sends: Sends) -> SimRecord:
    adm = live.admission
    assert adm is not None
    engine.finish(adm)
    sends.complete(live.send, now)
    s = live.send
    alloc = adm.allocation
    return SimRecord(
        seq=s.seq,
        lane=s.lane,
        session_id=s.session_id,
        thread_id=s.session.threads[s.thread].thread_id,
        turn=s.turn,
        warmup=s.warmup,
        sent_s=adm.arrived_s,
        admitted_s=adm.admitted_s,
        first_token_s=adm.first_token_s,
        end_s=now,
        prompt_tokens=alloc.prompt_tokens,
        output_tokens=live.prompt.output_tokens,
        gpu_hit_tokens=alloc.gpu_hit_tokens,
        offload_hit_tokens=alloc.offload_hit_tokens,
        theoretical_hit_tokens=live.theoretical,
        replica=live.replica,
        replica_theoretical_hit_tokens=live.replica_theoretical,
    )


class RecordedSends:
    """A real run's sends (``requests.parquet``), at their recorded times: open loop, so the
    schedule is the measured one and only the cache model is left to be wrong."""

    def __init__(self, sessions: Iterable[SessionPlan], records: list[RequestRecord]) -> None:
        by_id = {s.session_id: s for s in sessions}
        rows = sorted((r for r in records if r.sent_ns), key=lambda r: r.sent_ns)
        t0 = rows[0].sent_ns if rows else 0
        instances: dict[str, int] = {}
        self._queue: list[Send] = []
        for seq, r in enumerate(rows):
            base, _, copy = r.session_id.partition("#")
            session = by_id.get(base)
            if session is None:
                continue
            thread = next(
                (i for i, th in enumerate(session.threads) if th.thread_id == r.thread_id), None
            )
            if thread is None or r.turn >= len(session.threads[thread].turns):
                continue
            instance = instances.setdefault(r.session_id, len(instances))
            self._queue.append(
                Send(
                    seq,
                    r.lane,
                    instance,
                    session,
                    int(copy or 0),
                    thread,
                    r.turn,
                    r.warmup,
                    (r.sent_ns - t0) / 1e9,
                )
            )
        self.skipped = len(rows) - len(self._queue)
        self._queue.reverse()

    def start(self, now: float) -> None:
        pass

    def next_due_s(self) -> float | None:
        return self._queue[-1].at_s if self._queue else None

    def poll(self, now: float) -> list[Send]:
        out = []
        while self._queue and self._queue[-1].at_s <= now:
            out.append(self._queue.pop())
        return out

    def complete(self, send: Send, now: float) -> None:
        pass
