"""Replay's closed-loop schedule as a pure state machine: what ``agentx replay``'s lanes send,
and when, given when each request finishes. No clock of its own: ``simulate`` drives it with a
virtual one (the engine model says when a request finishes).

The rules are replay's (:mod:`agentx.replay.lanes`, docs/replay.md): ``concurrency`` lanes each
replay one session at a time, taking the trace's sessions in order (recycled, each copy with a
new salt, only when ``duration_s`` or ``max_requests`` asks for more load); within a session
every thread runs concurrently, turn ``k+1`` of a thread is sent when turn ``k`` has finished
plus its recorded think time x ``time_scale`` (capped at ``max_think_s``), and a thread whose
plan names a predecessor starts when that request finishes plus its recorded gap. The first
``warmup`` requests of each lane are warm-up. No request is sent after ``duration_s`` nor beyond
``max_requests`` measured ones.

This is the seam for the shared replay schedule of issue 11 (``agentx/schedule/``): its driving
contract is the same (``start``, ``poll``, ``complete``, ``next_due_s``), so when replay's lanes
run on that pure schedule, this module is replaced by an adapter to it and simulate follows
replay's rules by construction.

    sched = ReplaySchedule(plan.sessions, ScheduleRules(concurrency=2, time_scale=0))
    sched.start(0.0)
    while (t := sched.next_due_s()) is not None:   # (or when a request ends)
        for send in sched.poll(t):                 # send each at t ...
            ...
        sched.complete(send, t_end)                # ... and say when it finished
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from agentx.replay.plan import SessionPlan


@dataclass(frozen=True, slots=True)
class ScheduleRules:
    """The subset of ``ReplayOptions`` that decides what is sent when."""

    concurrency: int = 1
    time_scale: float = 1.0
    max_think_s: float | None = None
    warmup: int = 0  # requests per lane
    max_requests: int | None = None  # measured requests
    duration_s: float | None = None  # no sends after this long

    @property
    def recycle(self) -> bool:
        return self.duration_s is not None or self.max_requests is not None

    def scaled(self, seconds: float) -> float:
        s = seconds * self.time_scale
        return min(s, self.max_think_s) if self.max_think_s is not None else s


@dataclass(frozen=True, slots=True)
class Send:
    """One request to send: which turn of which session copy, on which lane."""

    seq: int  # send order
    lane: int
    instance: int  # session copies in the order lanes took them (the salt's counter)
    session: SessionPlan
    copy_no: int  # 0 for the first pass over the trace
    thread: int
    turn: int
    warmup: bool
    at_s: float  # when it is due (scheduled)

    @property
    def session_id(self) -> str:
        sid = self.session.session_id
        return sid if self.copy_no == 0 else f"{sid}#{self.copy_no}"


@dataclass(slots=True)
class _Running:
    """One session copy on one lane."""

    lane: int
    instance: int
    session: SessionPlan
    copy_no: int
    remaining: int  # requests not finished yet
    waiting: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # dep -> threads


class ReplaySchedule:
    def __init__(self, sessions: tuple[SessionPlan, ...], rules: ScheduleRules) -> None:
        self.sessions = sessions
        self.rules = rules
        self._heap: list[tuple[float, int, int, int, int]] = []  # (at, tie, run, thread, turn)
        self._runs: dict[int, _Running] = {}
        self._warm: dict[int, int] = {}
        self._tie = itertools.count()
        self._seq = itertools.count()
        self._next_session = 0
        self._budget = rules.max_requests
        self._deadline_s: float | None = None
        self.stopped = False

    def start(self, now: float) -> None:
        if self.rules.duration_s is not None:
            self._deadline_s = now + self.rules.duration_s
        for lane in range(self.rules.concurrency):
            self._warm[lane] = self.rules.warmup
            self._take(lane, now)

    def _take(self, lane: int, now: float) -> None:
        n = len(self.sessions)
        i = self._next_session
        if self.stopped or n == 0 or (i >= n and not self.rules.recycle):
            return
        self._next_session += 1
        session = self.sessions[i % n]
        if session.requests == 0:
            return self._take(lane, now)
        run = _Running(lane, i, session, i // n, session.requests)
        self._runs[i] = run
        for ti, th in enumerate(session.threads):
            if th.after is None:
                self._push(now + self.rules.scaled(th.delay_s), i, ti, 0)
            else:
                run.waiting.setdefault(th.after, []).append(ti)

    def _push(self, at: float, run: int, thread: int, turn: int) -> None:
        heapq.heappush(self._heap, (at, next(self._tie), run, thread, turn))

    def next_due_s(self) -> float | None:
        """When the next request is due (``None``: nothing until a request completes)."""
        if self.stopped or not self._heap:
            return None
        at = self._heap[0][0]
        if self._deadline_s is not None and at > self._deadline_s:
            self.stopped = True
            return None
        return at

    def poll(self, now: float) -> list[Send]:
        """The requests due by ``now``, to send now."""
        out: list[Send] = []
        while (due := self.next_due_s()) is not None and due <= now:
            send = self._pop(now)
            if send is not None:
                out.append(send)
        return out

    def _pop(self, now: float) -> Send | None:
        at, _, ri, ti, k = heapq.heappop(self._heap)
        run = self._runs[ri]
        warmup = self._warm[run.lane] > 0
        if warmup:
            self._warm[run.lane] -= 1
        elif self._budget is not None:
            if self._budget <= 0:
                self.stopped = True
                return None
            self._budget -= 1
            if self._budget == 0:
                self.stopped = True  # the last request: nothing new after it
        return Send(
            next(self._seq), run.lane, ri, run.session, run.copy_no, ti, k, warmup, max(at, now)
        )

    def complete(self, send: Send, now: float) -> None:
        """``send`` finished at ``now``: release what waited for it."""
        run = self._runs[send.instance]
        th = run.session.threads[send.thread]
        rules = self.rules
        if send.turn + 1 < len(th.turns):
            nxt = th.turns[send.turn + 1]
            self._push(now + rules.scaled(nxt.think_s), send.instance, send.thread, send.turn + 1)
        for ti in run.waiting.pop((send.thread, send.turn), ()):
            delay = run.session.threads[ti].delay_s
            self._push(now + rules.scaled(delay), send.instance, ti, 0)
        run.remaining -= 1
        if run.remaining == 0:
            del self._runs[send.instance]
            self._take(run.lane, now)
