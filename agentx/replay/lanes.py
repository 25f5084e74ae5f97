"""The lanes: one process's share of a replay, on one event loop, driving the schedule.

What is sent and when is decided by :class:`agentx.schedule.Schedule` (the rules: snapshot
start, warm-up, think times, spawn/join, idle caps, stopping; see its docs). This module is its
real-time driver: it polls the schedule on the event loop's clock, builds each due request
(:mod:`agentx.workload.build`), streams it (:mod:`agentx.replay.client`), and reports the end back.

Sessions are read when the schedule first needs them: the schedule knows only how many there
are, and each one a lane waits for is planned (``await sessions.get(i)``: a lazy plan indexes it
then, off the event loop) and supplied as a tree built from its metadata
(:func:`agentx.workload.trees.tree_of`). A tree instance's rows are materialised one by one by its
session's loader (:mod:`agentx.workload.source`) when they are sent (a warm-up primer included),
hash-only rows get their synthetic text then (:class:`agentx.workload.build.SynthCache`), and the
loader is dropped when the instance ends. So the first request waits only for the first
sessions, and memory follows the trees on the lanes, not the corpus nor the run: each finished
request's row goes to the process's spool on disk (:class:`agentx.store.rowspool.RowSpool`).

Stopping: ``--duration`` and ``--max-requests`` stop *new* requests; those in flight drain and
keep their rows (finishing after the deadline marks them ``in_window=False``). An abort (Ctrl-C,
a failed warm-up request, a breached failure gate) also cancels the requests in flight: they
become ``cancelled`` rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import itertools
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from agentx.core.errors import AgentxError
from agentx.core.record import ERR_CANCELLED, ERR_CONNECT, RequestRecord
from agentx.metrics.errors import hint
from agentx.replay.bottleneck import LoopMonitor, Tick
from agentx.replay.client import StreamOutcome, stream_request
from agentx.replay.gates import FailedRatioGate
from agentx.replay.http1.pool import StreamClient
from agentx.replay.replicas import ReplicaSet
from agentx.replay.theory import SentLog
from agentx.routing import SessionHeader
from agentx.schedule import LaneStart, Phase, Schedule, ScheduleOptions, Send
from agentx.schedule.arrivals import ArrivalLog, Arrivals
from agentx.store.rowspool import RowSpool
from agentx.workload.build import BuildConfig, SynthCache, ThreadBuilder, marker_salt
from agentx.workload.plan import SessionPlan, Sessions, Tally
from agentx.workload.source import Forgetting, SessionLoader, TraceSource
from agentx.workload.trees import request_tree, tree_of

NS_PER_S = 1_000_000_000
CONNECT_BACKOFF_S = 1.0  # a lane whose request could not connect waits before its next one


def trim_heap() -> None:
    """Hand the free pages inside glibc's heap back to the OS (``malloc_trim``): what an ended
    session's rows and requests leave between live blocks, which glibc by itself returns only
    from the heap's top (10-20 MB of a 64-lane main process's RSS). A few ms for a heap of
    ~100 MB, out of the GIL (ctypes releases it); a no-op off glibc."""
    global _trim
    if _trim is None:
        _trim = _no_trim
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    _trim(0)


def _no_trim(pad: int) -> int:
    return 0


_trim: Callable[[int], int] | None = None


@dataclass(frozen=True, slots=True)
class LaneConfig:
    build: BuildConfig
    schedule: ScheduleOptions  # the run's rules; max_requests: this process's share
    lanes: tuple[int, ...]  # the global numbers of the lanes this process runs
    seed: int = 0
    arrivals: Arrivals | None = None  # open loop: this process's share of the arrivals
    timeout_s: float = 600.0
    salt: bool = True
    nonce: str = "0"  # unique per run (and per worker), so markers never repeat across runs
    id_prefix: str = "r"
    headers: dict[str, str] = field(default_factory=dict)
    session_header: SessionHeader | None = None  # --session-header: per request, per tree
    max_failed_ratio: float | None = None  # abort when measured failures exceed this share
    gate_after: int = 10  # ... once this many measured requests have ended
    # --request-rate: the sessions are single requests (agentx.replay.open_loop) sharing the
    # marker of their trace session's copy
    single_requests: bool = False


@dataclass(slots=True)
class Counters:
    """Live tallies for the progress display (cheap increments on the hot path)."""

    sent: int = 0
    in_flight: int = 0
    ok: int = 0
    errors: int = 0
    output_tokens: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cached_known_prompt: int = 0  # prompt tokens of requests that reported cached tokens
    sessions_started: int = 0
    sessions_completed: int = 0
    active_lanes: int = 0
    live_fallbacks: int = 0


@dataclass(slots=True)
class LaneResult:
    counters: Counters  # its rows are in the engine's spool
    started_ns: int  # perf_counter_ns when the lanes started
    ended_ns: int
    deadline_ns: int | None  # end of the --duration window
    cpu_s: float
    interrupted: bool
    sent_log_error: str | None = None
    profiling_started_ns: int | None = None  # start of the measured window (after warm-up)
    lane_starts: list[LaneStart] = field(default_factory=list)
    failure: str | None = None  # why the run was aborted (a warm-up request, a gate)
    idle_jumps: dict[str, float] = field(default_factory=dict)
    arrivals: ArrivalLog | None = None  # open loop: what arrived, when it started (schedule s)
    ticks: list[Tick] = field(default_factory=list)  # the event loop's lateness and CPU share
    tally: Tally | None = None  # what this process indexed of a lazy plan


# The block texts the lanes keep. Each thread keeps its own text from turn to turn
# (:class:`agentx.prefixcache.synth.ThreadText`), so the cache only serves the blocks a new thread
# shares with those before it (a subagent's inherited context, a common system prompt); a block
# missed is made again in ~6 us (100K tokens of text in ~10 ms), against ~0.6 KB held per block.
LANE_SYNTH_BYTES = 8 << 20  # ~11 MiB of Python objects at 64 lanes (16 MB: ~22 MiB)


class LaneDriver:
    """Runs ``sessions`` on ``config.lanes`` by ``config.schedule``.

    ``on_boundary`` is awaited once the warm-up is over, before the measured window starts (the
    run scrapes the server's counters there). ``replicas``: a run over several endpoints, each
    request sent where their router says (``client`` then unused)."""

    def __init__(
        self,
        sessions: Sessions,
        source: TraceSource,
        config: LaneConfig,
        client: StreamClient,
        sent_log: SentLog,
        rows: RowSpool,
        on_boundary: Callable[[], Awaitable[None]] | None = None,
        replicas: ReplicaSet | None = None,
    ) -> None:
        self.sessions = sessions
        self.source = source
        self.synth = SynthCache(LANE_SYNTH_BYTES)  # block texts of hash-only rows, every lane's
        self.config = config
        self.client = client
        self.replicas = replicas
        self.sent_log = sent_log
        self.rows = rows
        self.on_boundary = on_boundary
        self.schedule = Schedule(  # trees supplied when wanted
            len(sessions),
            config.schedule,
            lanes=config.lanes,
            seed=config.seed,
            arrivals=config.arrivals,
        )
        # the sessions supplied, by index, while an instance of theirs may run (a plan held
        # for every session reached would grow with the run: sessions.plan(i) gives it again)
        self._plans: dict[int, SessionPlan] = {}
        self._trees: dict[int, int] = {}  # tree instance -> its tree, while it has a loader
        self._supplying: set[int] = set()
        self._error: AgentxError | None = None  # a session that could not be read
        self.counters = Counters()
        self.aborted = False
        self.failure: str | None = None
        self._stop_requested = False
        self._seq = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sending: set[asyncio.Task[None]] = set()  # tasks that began (safe to cancel)
        self._wake = asyncio.Event()
        self._t0_ns = 0
        self._deadline_ns: int | None = None
        self._builders: dict[tuple[int, int], ThreadBuilder] = {}
        self._loaders: dict[int, SessionLoader] = {}  # per tree instance
        self._gate = FailedRatioGate(config.max_failed_ratio, config.gate_after)
        self._tokens: dict[str, str] = {}  # tree -> the session token a router answered (llm-d)

    # -- control ------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop_requested = True
        self._wake.set()

    def abort(self, reason: str | None = None) -> None:
        """Stop, and cancel what is in flight (Ctrl-C; a failed warm-up request or gate)."""
        if reason is not None and self.failure is None:
            self.failure = reason
        self.aborted = reason is None or self.aborted
        self._stop_requested = True
        for task in list(self._sending):
            task.cancel()
        self._wake.set()

    def _now_s(self) -> float:
        return (time.perf_counter_ns() - self._t0_ns) / NS_PER_S

    async def run(self) -> LaneResult:
        cpu0 = time.thread_time()
        self._t0_ns = started = time.perf_counter_ns()
        sched = self.schedule
        monitor = LoopMonitor()
        watching = asyncio.create_task(monitor.run())
        try:
            profiling_ns = await self._drive()
        finally:
            watching.cancel()
        if self._error is not None:
            raise self._error
        return LaneResult(
            counters=self.counters,
            started_ns=started,
            ended_ns=time.perf_counter_ns(),
            deadline_ns=self._deadline_ns,
            cpu_s=time.thread_time() - cpu0,
            interrupted=self.aborted,
            sent_log_error=self.sent_log.error,
            profiling_started_ns=profiling_ns,
            lane_starts=list(sched.lane_starts),
            failure=self.failure,
            idle_jumps={
                "system_jumps": sched.system_idle.jumps,
                "system_skipped_s": round(sched.system_idle.skipped_s, 3),
                "trace_jumps": sched.trace_idle.jumps,
                "trace_skipped_s": round(sched.trace_idle.skipped_s, 3),
            },
            arrivals=sched.arrival_log(),
            ticks=monitor.ticks,
            tally=self.sessions.tally if self.sessions.lazy else None,
        )

    async def _drive(self) -> int | None:
        """Run the schedule to its end; returns when the measured window began."""
        sched = self.schedule
        sched.start(0.0)
        profiling_ns: int | None = None
        while True:
            if self._stop_requested and not sched.stopped:
                sched.stop(self._now_s())
            self._supply()
            ended = sched.drain_finished()
            for instance in ended:
                self._loaders.pop(instance, None)
                tree = self._trees.pop(instance, None)
                if tree is not None and tree not in self._trees.values():
                    self._plans.pop(tree, None)
            if ended:
                trim_heap()
            for send in sched.poll(self._now_s()):
                task = asyncio.create_task(self._send(send))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self._supply()  # trees the poll made a lane wait for (an open-loop arrival)
            self._count_lanes()
            if sched.phase is Phase.BOUNDARY:
                if self.on_boundary is not None:
                    await self.on_boundary()
                sched.begin_profiling(self._now_s())
                assert sched.profiling_started_s is not None
                profiling_ns = self._t0_ns + int(sched.profiling_started_s * NS_PER_S)
                if sched.options.duration_s is not None:
                    self._deadline_ns = profiling_ns + int(sched.options.duration_s * NS_PER_S)
                continue
            if sched.done:
                break
            due = sched.next_due_s()
            self._wake.clear()
            timeout = None if due is None else max(0.0, due - self._now_s())
            if timeout is None or timeout > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
        return profiling_ns

    def _supply(self) -> None:
        """Start reading the sessions the schedule waits for."""
        for index in self.schedule.wanted:
            if index not in self._supplying:
                self._supplying.add(index)
                task = asyncio.create_task(self._load_tree(index))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _load_tree(self, index: int) -> None:
        try:
            plan = await self.sessions.get(index)  # indexed now (off the loop) if lazy
        except AgentxError as exc:
            self._fail(exc)
            return
        if plan is not None:
            self._plans[index] = plan
        tree = None
        if plan is not None:
            tree = request_tree(plan) if self.config.single_requests else tree_of(plan)
        self.schedule.provide(index, tree, self._now_s())
        self._wake.set()

    def _fail(self, exc: AgentxError) -> None:
        """The trace could not be read: stop, and raise it once the requests in flight ended."""
        if self._error is None:
            self._error = exc
        self.abort()

    def _count_lanes(self) -> None:
        c = self.counters
        c.sessions_started = self.schedule.trees_started
        c.sessions_completed = self.schedule.trees_completed
        c.active_lanes = self.schedule.active_lanes

    # -- one request --------------------------------------------------------------------------

    async def _send(self, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._sending.add(task)
        ok = False
        try:
            ok = await self._send_one(send)
        except AgentxError as exc:  # its row could not be read back from the trace
            self._fail(exc)
        finally:
            self._sending.discard(task)
            self.schedule.complete(send.id, self._now_s(), ok)
            self._wake.set()

    async def _send_one(self, send: Send) -> bool:
        session = self._plans.get(send.tree)
        if session is None:  # a tree started again after its instances ended (recycled)
            session = self._plans[send.tree] = self.sessions[send.tree]
        thread = session.threads[send.stream]
        key = (send.instance, send.stream)
        builder = self._builders.get(key)
        if builder is None:
            builder = self._builders[key] = ThreadBuilder(
                self.config.build, thread.turns[send.turn].meta.api, self.synth
            )
        last = not send.primer and send.turn == len(thread.turns) - 1
        if last:
            del self._builders[key]  # the stream's last request: nothing builds on it
        record, outcome = await self._request(send, session, builder, last)
        if self.config.build.live:
            builder.live_reply(outcome.assistant)
        if record.error_type == ERR_CANCELLED or (self._stop_requested and self.failure):
            pass  # the run is being stopped: not the request's fault
        elif send.warmup and not record.ok:
            detail = (record.error or record.error_type or "failed").strip()
            advice = hint(record.error_type or "", record.status, detail, record.prompt_tokens)
            self.abort(
                f"warm-up request failed (session {session.session_id}, thread "
                f"{thread.thread_id}, turn {send.turn}): {detail}"
                + (f"; {advice}" if advice else "")
            )
        elif not send.warmup and (reason := self._gate.add(record.ok)) is not None:
            self.abort(reason)
        if record.error_type == ERR_CONNECT and not self._stop_requested:
            await asyncio.sleep(CONNECT_BACKOFF_S)
        return record.ok

    async def _request(
        self, send: Send, session: SessionPlan, builder: ThreadBuilder, last: bool = False
    ) -> tuple[RequestRecord, StreamOutcome]:
        cfg = self.config
        thread = session.threads[send.stream]
        loader = self._loaders.get(send.instance)
        if loader is None:
            loader = self._loaders[send.instance] = self.source.load_session(session.source)
            self._trees[send.instance] = send.tree
        ex = loader.exchange(thread.turns[send.turn].meta)
        if not send.primer and send.turn > 0 and isinstance(loader, Forgetting):
            # the thread's previous turn is not sent again once this one is (a primer, the
            # last turn before the measured window, is re-sent before its successor)
            loader.forget(thread.turns[send.turn - 1].meta)
        key = f"s{session.index}.{send.copy}" if cfg.single_requests else send.instance
        salt = marker_salt(cfg.nonce, key) if cfg.salt else None
        built = builder.build(ex, salt, max_tokens=send.max_tokens)
        if built.live_fallback:
            self.counters.live_fallbacks += 1
        session_id = session.session_id if send.copy == 0 else f"{session.session_id}#{send.copy}"
        request_id = f"{cfg.id_prefix}{next(self._seq)}"
        client, replica, routed = self.client, None, None
        if self.replicas is not None:  # the tree (a session copy) is what session routing keeps
            replica, routed = self.replicas.pick(session_id, built.body, built.api)
            client = self.replicas.clients[replica]
        start_wall_ns = time.time_ns()
        self.sent_log.add(
            request_id,
            built.api,
            time.perf_counter_ns(),
            f"{session_id}\x1f{thread.thread_id}",
            built.body,
            replica,
            last,  # the sent log forgets the thread: its bodies held are the live threads'
        )
        self.counters.sent += 1
        self.counters.in_flight += 1
        headers, on_headers = self._session_headers(session_id, thread.thread_id, thread.after)
        created_ns = time.perf_counter_ns()
        try:
            if self.aborted or self.failure is not None:
                raise asyncio.CancelledError  # due just as the run was aborted: never sent
            outcome = await stream_request(
                client,
                built.path,
                built.body,
                built.api,
                headers=headers,
                live=cfg.build.live,
                timeout_s=cfg.timeout_s,
                on_headers=on_headers,
            )
        except asyncio.CancelledError:
            # cancelled (Ctrl-C, an abort) while being sent: it is a row
            outcome = StreamOutcome(
                created_ns, None, False, ERR_CANCELLED, "cancelled before it was sent", e2e_ns=0
            )
        finally:
            self.counters.in_flight -= 1
            if self.replicas is not None and replica is not None and routed is not None:
                self.replicas.finished(replica, routed)
        end_ns = outcome.sent_ns + (outcome.e2e_ns or 0)
        record = RequestRecord(
            request_id=request_id,
            source_request_id=ex.request_id,
            lane=send.lane,
            session_id=session_id,
            thread_id=thread.thread_id,
            turn=thread.turns[send.turn].index,  # the turn in the trace's thread
            warmup=send.warmup,
            start_wall_ns=start_wall_ns,
            scheduled_ns=self._t0_ns + int(send.due_s * NS_PER_S),
            sent_ns=outcome.sent_ns,
            status=outcome.status,
            ok=outcome.ok,
            error_type=outcome.error_type,
            error=outcome.error,
            ttfb_ns=outcome.ttfb_ns,
            ttft_ns=outcome.ttft_ns,
            ttfc_ns=outcome.ttfc_ns,
            e2e_ns=outcome.e2e_ns,
            itl_ns=outcome.itl_ns,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            cached_tokens=outcome.cached_tokens,
            expected_completion_tokens=built.max_tokens,
            in_window=send.warmup or self._deadline_ns is None or end_ns <= self._deadline_ns,
            replica=replica,
        )
        self._count(record)
        self.rows.add(record)
        if self.rows.error is not None and self.failure is None:
            self.abort(self.rows.error)  # the run's results would be lost
        return record, outcome

    def _session_headers(
        self, tree: str, thread: str, after: tuple[int, int] | None
    ) -> tuple[dict[str, str], Callable[[Mapping[str, str]], None] | None]:
        """A request's headers with its session for a server-side router (``--session-header``:
        the tree, a subagent's thread, the token the router answered last), and what keeps
        that token."""
        cfg = self.config
        sh = cfg.session_header
        if sh is None:
            return cfg.headers, None
        sub = thread if after is not None else None  # a subagent's thread: after its parent's
        headers = {**cfg.headers, **sh.headers(tree, sub, self._tokens.get(tree))}
        if not sh.echo:
            return headers, None

        def keep(answered: Mapping[str, str]) -> None:
            token = answered.get(sh.name)
            if token:
                self._tokens[tree] = token

        return headers, keep

    def _count(self, r: RequestRecord) -> None:
        c = self.counters
        if r.ok:
            c.ok += 1
        else:
            c.errors += 1
        c.output_tokens += r.completion_tokens or 0
        c.prompt_tokens += r.prompt_tokens or 0
        if r.cached_tokens is not None and r.prompt_tokens:
            c.cached_tokens += r.cached_tokens
            c.cached_known_prompt += r.prompt_tokens
