"""What to replay: sessions -> threads -> turns, with the recorded timing between them.

The plan is built from metadata only (:mod:`agentx.workload.source`): ids, thread structure,
timings, token counts. A session's bodies or block ids are read when its lane reaches it.
``--sessions N`` samples before anything heavy is read.

Only model calls are replayed: rows of other traffic, rows flagged ``non_model`` or ``partial``,
requests the provider refused when they were captured (status >= 400) and rows without a prompt
are skipped and counted. Within a thread, each turn waits for the previous one plus the recorded
think time. A thread other than the session's first starts after its recorded *predecessor* (its
parent request when the trace names one, else the latest request of another thread that had
finished when the thread began) plus the recorded gap; so subagents start at their recorded
offsets and run concurrently with their parent, as captured. Hash-only rows (Weka, Mooncake) get
synthetic text when sent (:class:`agentx.prefixcache.synth.ThreadText`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from agentx.apis import MODEL_APIS, Api
from agentx.core.errors import TraceError, UsageError
from agentx.core.flags import FLAG_NON_MODEL, FLAG_PARTIAL
from agentx.core.models import Exchange, ExchangeMeta
from agentx.workload.source import MemorySource, Reindexable, SessionIndex, TraceSource

SKIP_FLAGS = (FLAG_NON_MODEL, FLAG_PARTIAL)
NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Turn:
    meta: ExchangeMeta  # the row, without its body: the session's loader materialises it
    index: int  # position in its thread, from 0
    think_s: float  # recorded gap after the previous turn of the thread (0 for the first)
    t_s: float  # recorded start, seconds after the session's first request


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    thread_id: str
    turns: tuple[Turn, ...]
    after: tuple[int, int] | None  # (thread, turn) of this session that must finish first
    delay_s: float  # recorded gap between that finish (or the session start) and the first turn


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session_id: str
    index: int  # position among the trace's replayable sessions (or files, when sampled by file)
    threads: tuple[ThreadPlan, ...]
    source: SessionIndex  # what the trace source loads the session from

    @property
    def requests(self) -> int:
        return sum(len(t.turns) for t in self.threads)


@dataclass(frozen=True, slots=True)
class Unplanned:
    """A session planned (and counted) once, and planned again from its source whenever it is
    asked for (:class:`~agentx.workload.source.Reindexable`): a plan of every session, held for
    the whole run, cost ~0.6 KB a row (~120 MB on a 200K-row corpus); this ~0.1 KB a session."""

    unit: int  # the source's handle on the session (SessionIndex.unit)
    index: int  # the plan's SessionPlan.index


@dataclass(slots=True)
class Tally:
    """What the plan knows of the rows it indexed: counts for the summary and the probe."""

    apis: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> rows
    synthesized: int = 0  # hash-only rows: given synthetic text when sent
    requests: int = 0
    max_threads: int = 1
    indexed: int = 0  # sessions indexed so far

    def merge(self, other: Tally) -> None:
        """Add another process's tally (workers index their own sessions of a lazy plan)."""
        self.apis.update(other.apis)
        self.skipped.update(other.skipped)
        self.synthesized += other.synthesized
        self.requests += other.requests
        self.max_threads = max(self.max_threads, other.max_threads)
        self.indexed += other.indexed

    def add(self, session: SessionIndex) -> list[ExchangeMeta]:
        """Count a session's rows; returns those to replay."""
        rows = []
        for m in session.exchanges:
            reason = skip_reason(m)
            if reason is not None:
                self.skipped[reason] += 1
                continue
            self.apis[str(m.api)] += 1  # plain str: orjson takes no str subclass as a key
            self.synthesized += m.hash_only
            rows.append(m)
        self.requests += len(rows)
        self.indexed += 1
        return rows


MAX_THREADS_UNKNOWN = 16  # threads per session assumed (connections) before all are indexed
PREFETCH = 1  # sessions indexed ahead of the one a lane takes (lazy plans)
_indexer: ThreadPoolExecutor | None = None


def _index_thread() -> ThreadPoolExecutor:
    """One thread indexes sessions for the whole process: more would only compete with the
    event loop for the GIL (indexing is Python work), and delay the requests it sends."""
    global _indexer
    if _indexer is None:
        _indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentx-index")
    return _indexer


class Sessions:
    """The sessions of a replay in run order: planned up front from the whole index, or (a
    source that knows its sessions without reading them, e.g. a Weka directory: one per file)
    indexed one by one when a lane first needs them (and the next one ahead), on one thread."""

    def __init__(
        self,
        source: TraceSource,
        tally: Tally,
        planned: Sequence[SessionPlan | Unplanned] = (),
        slots: Sequence[int] | None = None,
    ) -> None:
        self.source = source
        self.tally = tally
        self._planned = list(planned)
        self._slots = list(slots) if slots is not None else None  # source positions, lazy
        self._done: dict[int, SessionPlan | None] = {}
        self._pending: dict[int, asyncio.Future[SessionPlan | None]] = {}

    @property
    def lazy(self) -> bool:
        return self._slots is not None

    @property
    def complete(self) -> bool:
        """Whether every session has been indexed (the tally covers the whole selection)."""
        return self._slots is None or len(self._done) == len(self._slots)

    def __len__(self) -> int:
        return len(self._slots) if self._slots is not None else len(self._planned)

    def every(self, start: int, step: int) -> Sessions:
        """Sessions ``start, start + step, ...`` (one worker's share), sharing this tally."""
        if self._slots is None:
            return Sessions(self.source, self.tally, self._planned[start::step])
        return Sessions(self.source, self.tally, slots=self._slots[start::step])

    def _planned_again(self, p: SessionPlan | Unplanned) -> SessionPlan:
        if isinstance(p, SessionPlan):
            return p
        assert isinstance(self.source, Reindexable)
        session = self.source.reindex(p.unit)
        return _session(session, p.index, [m for m in session.exchanges if skip_reason(m) is None])

    def _index(self, i: int) -> tuple[SessionIndex, int] | None:
        assert self._slots is not None
        slot = self._slots[i]
        for session in self.source.index([slot]):
            return session, slot
        return None

    def _plan(self, i: int, found: tuple[SessionIndex, int] | None) -> SessionPlan | None:
        plan = None
        if found is not None:
            session, slot = found
            rows = self.tally.add(session)
            if rows:
                plan = _session(session, slot, rows)
                self.tally.max_threads = max(self.tally.max_threads, len(plan.threads))
        self._done[i] = plan
        return plan

    def plan(self, i: int) -> SessionPlan | None:
        """Session ``i`` (indexed now if it must be); ``None`` when it has nothing to replay."""
        if self._slots is None:
            return self._planned_again(self._planned[i])
        if i not in self._done:
            self._plan(i, self._index(i))
        return self._done[i]

    async def get(self, i: int) -> SessionPlan | None:
        """Session ``i``, indexed off the event loop; starts indexing the next few too."""
        if self._slots is None:
            return self._planned_again(self._planned[i])
        for k in range(i, min(i + 1 + PREFETCH, len(self._slots))):
            if k not in self._done and k not in self._pending:
                fut = self._pending[k] = asyncio.ensure_future(self._fetch(k))
                fut.add_done_callback(_seen)
        if i in self._done:
            return self._done[i]
        return await asyncio.shield(self._pending[i])

    async def _fetch(self, i: int) -> SessionPlan | None:
        loop = asyncio.get_running_loop()
        try:
            return self._plan(i, await loop.run_in_executor(_index_thread(), self._index, i))
        finally:
            self._pending.pop(i, None)

    def __getitem__(self, i: int) -> SessionPlan:
        plan = self.plan(i)
        if plan is None:
            raise IndexError(f"session {i} has nothing to replay")
        return plan

    def __iter__(self) -> Iterator[SessionPlan]:
        for i in range(len(self)):
            plan = self.plan(i)
            if plan is not None:
                yield plan


def _seen(fut: asyncio.Future[SessionPlan | None]) -> None:
    """Mark a prefetched session's failure as seen: it reaches the run when a lane asks for that
    session (a prefetch nobody asks for again is not an error asyncio should log)."""
    if not fut.cancelled():
        fut.exception()


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    sessions: Sessions
    source: TraceSource
    warnings: tuple[str, ...] = ()  # what planning found that the run's reader must know

    @property
    def requests(self) -> int:
        return self.sessions.tally.requests

    @property
    def known_requests(self) -> int | None:
        """The requests to replay, ``None`` while a lazy plan has sessions still unread."""
        return self.requests if self.sessions.complete else None

    @property
    def apis(self) -> dict[str, int]:
        return dict(self.sessions.tally.apis)

    @property
    def skipped(self) -> dict[str, int]:
        return dict(self.sessions.tally.skipped)

    @property
    def synthesized(self) -> int:
        return self.sessions.tally.synthesized

    @property
    def max_threads(self) -> int:
        t = self.sessions.tally.max_threads
        return t if self.sessions.complete else max(t, MAX_THREADS_UNKNOWN)


def skip_reason(m: ExchangeMeta) -> str | None:
    if m.api not in MODEL_APIS:
        return "not a model call"
    for flag in SKIP_FLAGS:
        if flag in m.flags:
            return f"flagged {flag}"
    if m.status is not None and m.status >= 400:
        return "failed when captured"
    if not m.has_prompt:
        return "no conversation"
    return None


def _end_ns(m: ExchangeMeta) -> int:
    return m.start_wall_ns + (m.e2e_ns or 0)


def _think_s(prev: ExchangeMeta, m: ExchangeMeta) -> float:
    if m.think_time_s is not None:
        return max(0.0, m.think_time_s)
    return max(0.0, (m.start_wall_ns - _end_ns(prev)) / NS_PER_S)


def _session(source: SessionIndex, index: int, rows: list[ExchangeMeta]) -> SessionPlan:
    by_thread: dict[str, list[ExchangeMeta]] = {}
    for ex in sorted(rows, key=lambda e: e.start_wall_ns):
        by_thread.setdefault(ex.thread_id, []).append(ex)
    order = sorted(by_thread, key=lambda t: by_thread[t][0].start_wall_ns)
    where: dict[str, tuple[int, int]] = {}
    for ti, tid in enumerate(order):
        for k, ex in enumerate(by_thread[tid]):
            where[ex.request_id] = (ti, k)
    session_start = by_thread[order[0]][0].start_wall_ns
    threads = []
    for ti, tid in enumerate(order):
        exs = by_thread[tid]
        turns = tuple(
            Turn(
                ex,
                k,
                0.0 if k == 0 else _think_s(exs[k - 1], ex),
                (ex.start_wall_ns - session_start) / NS_PER_S,
            )
            for k, ex in enumerate(exs)
        )
        first = exs[0]
        start = first.start_wall_ns
        after: tuple[int, int] | None = None
        anchor = session_start
        if ti > 0:
            parent = where.get(first.parent_request_id or "")
            if parent is not None and parent[0] != ti:
                pex = by_thread[order[parent[0]]][parent[1]]
                if pex.start_wall_ns <= start:
                    after, anchor = parent, _end_ns(pex)
            if after is None:  # the latest request of an earlier thread that had finished
                best: tuple[int, tuple[int, int]] | None = None
                for oi in range(ti):
                    for k, ex in enumerate(by_thread[order[oi]]):
                        end = _end_ns(ex)
                        if end <= start and (best is None or end > best[0]):
                            best = (end, (oi, k))
                if best is not None:
                    anchor, after = best
        threads.append(ThreadPlan(tid, turns, after, max(0.0, (start - anchor) / NS_PER_S)))
    return SessionPlan(source.session_id, index, tuple(threads), source)


def build_plan(
    trace: TraceSource | Iterable[Exchange],
    *,
    sessions: int | None = None,
    seed: int = 0,
    shard: tuple[int, int] = (0, 1),
    api_mode: str = "chat",
    max_entries: int | None = None,
) -> ReplayPlan:
    """Index, filter, sample (``sessions`` with ``seed``) and shard (``i % N == I``).
    ``max_entries``: only the trace's first sessions (files, rows; agentx-harness's
    ``--num-dataset-entries``), taken before anything else.

    ``trace`` is a :class:`TraceSource` (``open_source(path)``) or exchanges in memory. When the
    source knows its sessions without reading them (a Weka directory: one per file), they are
    sampled and sharded before any is read, and each is indexed when a lane first needs it, so
    the first request goes out whatever the corpus's size; otherwise the whole metadata index is
    read first and the sample is drawn among the sessions with something to replay.
    """
    source = trace if isinstance(trace, TraceSource) else MemorySource(trace)
    index, count = shard
    n = source.candidates
    tally = Tally()
    if n is not None:  # sample and shard the sessions the source knows, index them when used
        if max_entries is not None:
            n = min(n, max_entries)
        picked: Sequence[int] = range(n)
        if sessions is not None and sessions < n:
            picked = sorted(random.Random(seed).sample(range(n), sessions))
        slots = [p for i, p in enumerate(picked) if i % count == index]
        _check_apis(source.apis, api_mode)
        if not slots:
            raise UsageError(
                f"--shard {index}/{count} gets no session: the trace has fewer sessions"
            )
        return ReplayPlan(Sessions(source, tally, slots=slots), source, _sampled(sessions, n))
    plans: list[SessionPlan | Unplanned] = []
    again = isinstance(source, Reindexable)  # a plan held only while a lane runs it
    for session in itertools.islice(source.index(), max_entries):
        rows = tally.add(session)
        if rows:
            plan = _session(session, len(plans), rows)
            tally.max_threads = max(tally.max_threads, len(plan.threads))
            plans.append(Unplanned(session.unit, plan.index) if again else plan)
    if not plans:
        detail = ", ".join(f"{n} {why}" for why, n in tally.skipped.most_common()) or "it is empty"
        raise TraceError(f"nothing to replay: no model calls in the trace ({detail})")
    _check_apis(frozenset(tally.apis), api_mode)
    if sessions is not None and sessions < len(plans):
        chosen = sorted(random.Random(seed).sample(range(len(plans)), sessions))
        plans = [plans[i] for i in chosen]
    warnings = _sampled(sessions, len(plans))
    plans = [p for i, p in enumerate(plans) if i % count == index]
    if not plans:
        raise UsageError(f"--shard {index}/{count} gets no session: the trace has fewer sessions")
    return ReplayPlan(Sessions(source, tally, plans), source, warnings)


def _sampled(asked: int | None, available: int) -> tuple[str, ...]:
    """A warning when ``--sessions`` asks for more sessions than the trace has."""
    if asked is None or asked <= available:
        return ()
    return (
        f"--sessions {asked:,}: the trace has {available:,} sessions to replay, and all of them "
        "are (a session is never sent twice to make up the number; --duration recycles them)",
    )


def _check_apis(apis: frozenset[str] | None, api_mode: str) -> None:
    if api_mode == "messages" and apis is not None and apis - {Api.ANTHROPIC_MESSAGES}:
        others = ", ".join(sorted(apis - {Api.ANTHROPIC_MESSAGES}))
        raise UsageError(
            f"--api messages replays Anthropic requests; this trace also has {others} (use --api chat)"
        )
