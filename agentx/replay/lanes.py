"""The lanes: closed-loop replay of sessions on one event loop (one process's share of a run).

A lane replays one session at a time. Each thread of the session sends its turn ``k+1`` when
turn ``k`` has finished plus the recorded think time x ``time_scale`` (capped by ``max_think``);
threads start after their recorded predecessor (see :mod:`agentx.replay.plan`). A lane that
finishes a session takes the next one; past the end of the trace sessions are recycled (only
when ``--duration`` or ``--max-requests`` asks for more load), each copy with a fresh salt.

Stopping: ``--duration`` and ``--max-requests`` stop *new* requests; those in flight drain and
keep their rows (finishing after the deadline marks them ``in_window=False``). An abort
(Ctrl-C) also cancels the requests in flight: they become ``cancelled`` rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from agentx.record import ERR_CANCELLED, ERR_CONNECT, RequestRecord
from agentx.replay.build import BuildConfig, ThreadBuilder
from agentx.replay.client import StreamOutcome, stream_request
from agentx.replay.plan import SessionPlan, ThreadPlan
from agentx.replay.theory import SentLog

NS_PER_S = 1_000_000_000
CONNECT_BACKOFF_S = 1.0  # a lane whose request could not connect waits before its next one


@dataclass(frozen=True, slots=True)
class EngineConfig:
    build: BuildConfig
    lanes: tuple[int, ...]  # global lane numbers this process runs
    warmup: int = 0  # per lane
    duration_s: float | None = None
    max_requests: int | None = None  # measured requests this process may send
    time_scale: float = 1.0
    max_think_s: float | None = None
    timeout_s: float = 600.0
    salt: bool = True
    recycle: bool = False
    nonce: str = "0"  # unique per run (and per worker), so salts never repeat across runs
    id_prefix: str = "r"
    headers: dict[str, str] = field(default_factory=dict)


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
class EngineResult:
    records: list[RequestRecord]
    counters: Counters
    started_ns: int  # perf_counter_ns when the lanes started
    ended_ns: int
    deadline_ns: int | None  # end of the --duration window
    cpu_s: float
    interrupted: bool
    sent_log_error: str | None = None


class Engine:
    def __init__(
        self,
        sessions: tuple[SessionPlan, ...],
        config: EngineConfig,
        client: httpx.AsyncClient,
        sent_log: SentLog,
    ) -> None:
        self.sessions = sessions
        self.config = config
        self.client = client
        self.sent_log = sent_log
        self.records: list[RequestRecord] = []
        self.counters = Counters()
        self.stop = asyncio.Event()  # no new requests
        self.aborted = False
        self._seq = itertools.count()
        self._instances = itertools.count()
        self._next_session = 0
        self._budget = config.max_requests
        self._in_flight: set[asyncio.Task[StreamOutcome]] = set()
        self._deadline_ns: int | None = None
        self.on_record: Callable[[RequestRecord], None] | None = None

    # -- control ------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self.stop.set()

    def abort(self) -> None:
        """Stop, and cancel what is in flight (Ctrl-C)."""
        self.aborted = True
        self.stop.set()
        for task in list(self._in_flight):
            task.cancel()

    async def run(self) -> EngineResult:
        cpu0 = time.thread_time()
        started = time.perf_counter_ns()
        timer: asyncio.Task[None] | None = None
        if self.config.duration_s is not None:
            self._deadline_ns = started + int(self.config.duration_s * NS_PER_S)
            timer = asyncio.create_task(self._stop_at_deadline(self.config.duration_s))
        try:
            await asyncio.gather(*(self._lane(lane) for lane in self.config.lanes))
        finally:
            if timer is not None:
                timer.cancel()
        return EngineResult(
            records=self.records,
            counters=self.counters,
            started_ns=started,
            ended_ns=time.perf_counter_ns(),
            deadline_ns=self._deadline_ns,
            cpu_s=time.thread_time() - cpu0,
            interrupted=self.aborted,
            sent_log_error=self.sent_log.error,
        )

    async def _stop_at_deadline(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self.stop.set()

    async def _sleep(self, seconds: float) -> None:
        """Sleep, waking early when the run stops."""
        if seconds <= 0 or self.stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), seconds)

    def _scaled(self, seconds: float) -> float:
        s = seconds * self.config.time_scale
        cap = self.config.max_think_s
        return min(s, cap) if cap is not None else s

    # -- lanes, sessions, threads --------------------------------------------------------------

    def _take_session(self) -> tuple[SessionPlan, int] | None:
        n = len(self.sessions)
        i = self._next_session
        if n == 0 or (i >= n and not self.config.recycle):
            return None
        self._next_session += 1
        return self.sessions[i % n], i // n

    async def _lane(self, lane: int) -> None:
        warm = [self.config.warmup]
        self.counters.active_lanes += 1
        try:
            while not self.stop.is_set():
                taken = self._take_session()
                if taken is None:
                    break
                session, copy_no = taken
                self.counters.sessions_started += 1
                if await self._session(lane, session, copy_no, warm):
                    self.counters.sessions_completed += 1
        finally:
            self.counters.active_lanes -= 1

    async def _session(
        self, lane: int, session: SessionPlan, copy_no: int, warm: list[int]
    ) -> bool:
        salt = f"{self.config.nonce}{next(self._instances):x}" if self.config.salt else None
        session_id = session.session_id if copy_no == 0 else f"{session.session_id}#{copy_no}"
        finished: dict[tuple[int, int], int] = {}  # (thread, turn) -> perf_counter_ns it ended
        events: dict[tuple[int, int], asyncio.Event] = {
            t.after: asyncio.Event() for t in session.threads if t.after is not None
        }
        start_ns = time.perf_counter_ns()
        done = await asyncio.gather(
            *(
                self._thread(lane, session_id, ti, th, salt, start_ns, finished, events, warm)
                for ti, th in enumerate(session.threads)
            )
        )
        return all(done)

    async def _thread(
        self,
        lane: int,
        session_id: str,
        ti: int,
        th: ThreadPlan,
        salt: str | None,
        session_start_ns: int,
        finished: dict[tuple[int, int], int],
        events: dict[tuple[int, int], asyncio.Event],
        warm: list[int],
    ) -> bool:
        cfg = self.config
        sent = 0
        try:
            anchor = session_start_ns
            if th.after is not None:
                await events[th.after].wait()
                anchor = finished.get(th.after, time.perf_counter_ns())
            scheduled = anchor + int(self._scaled(th.delay_s) * NS_PER_S)
            builder = ThreadBuilder(cfg.build, th.turns[0].exchange.api)
            for turn in th.turns:
                if turn.index > 0:
                    scheduled = finished[(ti, turn.index - 1)] + int(
                        self._scaled(turn.think_s) * NS_PER_S
                    )
                await self._sleep((scheduled - time.perf_counter_ns()) / NS_PER_S)
                if self.stop.is_set():
                    break
                warmup = warm[0] > 0
                if warmup:
                    warm[0] -= 1
                elif self._budget is not None:
                    if self._budget <= 0:
                        self.stop.set()
                        break
                    self._budget -= 1
                    if self._budget == 0:
                        self.stop.set()  # this is the last request: no new ones after it
                record, outcome = await self._request(
                    lane, session_id, th, turn.index, builder, salt, warmup, scheduled
                )
                sent += 1
                finished[(ti, turn.index)] = time.perf_counter_ns()
                if (ti, turn.index) in events:
                    events[(ti, turn.index)].set()
                if cfg.build.live:
                    builder.live_reply(outcome.assistant)
                if record.error_type == ERR_CONNECT:
                    await self._sleep(CONNECT_BACKOFF_S)
            return sent == len(th.turns)
        finally:
            for key, event in events.items():  # never leave a dependent thread waiting
                if key[0] == ti:
                    event.set()

    async def _request(
        self,
        lane: int,
        session_id: str,
        th: ThreadPlan,
        turn: int,
        builder: ThreadBuilder,
        salt: str | None,
        warmup: bool,
        scheduled_ns: int,
    ) -> tuple[RequestRecord, StreamOutcome]:
        cfg = self.config
        ex = th.turns[turn].exchange
        built = builder.build(ex, salt)
        if built.live_fallback:
            self.counters.live_fallbacks += 1
        request_id = f"{cfg.id_prefix}{next(self._seq)}"
        start_wall_ns = time.time_ns()
        self.sent_log.add(
            request_id,
            built.api,
            time.perf_counter_ns(),
            f"{session_id}\x1f{th.thread_id}",
            built.body,
        )
        self.counters.sent += 1
        self.counters.in_flight += 1
        created_ns = time.perf_counter_ns()
        task = asyncio.create_task(
            stream_request(
                self.client,
                built.path,
                built.body,
                built.api,
                headers=cfg.headers,
                live=cfg.build.live,
                timeout_s=cfg.timeout_s,
            )
        )
        self._in_flight.add(task)
        try:
            outcome = await task
        except asyncio.CancelledError:
            if not task.cancelled():  # this thread itself is being cancelled: let it go
                raise
            # cancelled (Ctrl-C) before its first step: nothing was sent, but it is a row
            outcome = StreamOutcome(
                created_ns, None, False, ERR_CANCELLED, "cancelled before it was sent", e2e_ns=0
            )
        finally:
            self._in_flight.discard(task)
            self.counters.in_flight -= 1
        end_ns = outcome.sent_ns + (outcome.e2e_ns or 0)
        record = RequestRecord(
            request_id=request_id,
            source_request_id=ex.request_id,
            lane=lane,
            session_id=session_id,
            thread_id=th.thread_id,
            turn=turn,
            warmup=warmup,
            start_wall_ns=start_wall_ns,
            scheduled_ns=scheduled_ns,
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
            in_window=self._deadline_ns is None or end_ns <= self._deadline_ns,
        )
        self._count(record)
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        return record, outcome

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
