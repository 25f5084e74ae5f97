"""Replay's own schedule (:mod:`agentx.schedule`, the pure, clock-agnostic rules ``agentx replay``'s
lanes drive in real time), driven by ``simulate`` in virtual time: the engine model says when
each request finishes, the schedule says what is sent next and when. One set of rules for both.

Lanes, think-time scaling and caps, start ratios, warm-up primers, spawn/join, idle caps and
stopping are the schedule's (docs/replay.md); :class:`ScheduleRules` is the part of replay's
options ``simulate`` takes today (the other rules keep their replay defaults).

    sched = SharedSchedule(plan.sessions, ScheduleRules(concurrency=2, time_scale=0))
    sched.start(0.0)
    while (t := sched.next_due_s()) is not None:   # (or when a request ends)
        for send in sched.poll(t):                 # send each at t ...
            ...
        sched.complete(send, t_end)                # ... and say when it finished
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from agentx.replay.plan import SessionPlan, Sessions
from agentx.replay.trees import tree_of
from agentx.schedule import Phase, Schedule, ScheduleOptions, SpawnJoin
from agentx.schedule import Send as ScheduledSend


@dataclass(frozen=True, slots=True)
class ScheduleRules:
    """The subset of ``ReplayOptions`` that decides what is sent when."""

    concurrency: int = 1
    time_scale: float = 1.0
    max_think_s: float | None = None
    warmup: int = 0  # requests per lane
    max_requests: int | None = None  # measured requests
    duration_s: float | None = None  # no sends after this long
    start_ratio: tuple[float, float] = (0.0, 0.0)
    burst: bool = False
    spawn_join: SpawnJoin = "recorded"
    trace_idle_cap_s: float | None = None
    system_idle_cap_s: float | None = None

    @classmethod
    def of(cls, values: dict[str, Any]) -> ScheduleRules:
        """The rules among ``ReplayOptions`` fields (:func:`agentx.replay.scenario.scenario_values`:
        a preset and the flags given); the fields not given keep replay's defaults."""
        names = {f.name for f in fields(cls)} - {"warmup"}
        rules = {k: v for k, v in values.items() if k in names}
        return cls(warmup=values.get("warmup") or 0, **rules)

    @property
    def recycle(self) -> bool:
        return self.duration_s is not None or self.max_requests is not None

    def options(self, seed: int = 0) -> ScheduleOptions:
        return ScheduleOptions(
            lanes=tuple(range(self.concurrency)),
            recycle=self.recycle,
            start_ratio=self.start_ratio,
            seed=seed,
            time_scale=self.time_scale,
            max_think_s=self.max_think_s,
            warmup_per_lane=self.warmup,
            burst=self.burst,
            duration_s=self.duration_s,
            max_requests=self.max_requests,
            trace_idle_cap_s=self.trace_idle_cap_s,
            system_idle_cap_s=self.system_idle_cap_s,
            spawn_join=self.spawn_join,
        )


@dataclass(frozen=True, slots=True)
class Send:
    """One request to send: which turn of which session copy, on which lane."""

    seq: int  # the schedule's id of the send
    lane: int
    instance: int  # the tree instance (the cache-bust marker's key)
    session: SessionPlan
    copy_no: int  # 0 for the first pass over the trace
    thread: int
    turn: int
    warmup: bool  # warm-up or primer: fills the cache, left out of the rate
    at_s: float  # when it is due (scheduled)
    max_tokens: int | None = None  # the answer length to ask for; None: the recorded one

    @property
    def session_id(self) -> str:
        sid = self.session.session_id
        return sid if self.copy_no == 0 else f"{sid}#{self.copy_no}"


class SharedSchedule:
    """:class:`agentx.schedule.Schedule` over a replay plan's sessions, as simulate drives it."""

    def __init__(self, sessions: Sessions, rules: ScheduleRules, seed: int = 0) -> None:
        self.sessions = sessions
        # trees supplied when a lane wants them, as replay's lanes do (a lazy plan reads then)
        self._schedule = Schedule(len(sessions), rules.options(seed))

    def _supply(self, now: float) -> None:
        while wanted := self._schedule.wanted:
            for i in wanted:
                plan = self.sessions.plan(i)
                self._schedule.provide(i, None if plan is None else tree_of(plan), now)
        self._schedule.drain_finished()  # (replay's lanes free a session's rows here)

    def _boundary(self, now: float) -> None:
        self._supply(now)
        if self._schedule.phase is Phase.BOUNDARY:  # warm-up over: the measured window opens
            self._schedule.begin_profiling(now)
            self._supply(now)

    def start(self, now: float) -> None:
        self._schedule.start(now)
        self._boundary(now)

    def next_due_s(self) -> float | None:
        return self._schedule.next_due_s()

    def poll(self, now: float) -> list[Send]:
        out = [self._send(s) for s in self._schedule.poll(now)]
        self._boundary(now)
        return out

    def complete(self, send: Send, now: float) -> None:
        self._schedule.complete(send.seq, now, True)
        self._boundary(now)

    def _send(self, s: ScheduledSend) -> Send:
        return Send(
            seq=s.id,
            lane=s.lane,
            instance=s.instance,
            session=self.sessions[s.tree],
            copy_no=s.copy,
            thread=s.stream,
            turn=s.turn,
            warmup=s.warmup or s.primer,
            at_s=s.due_s,
            max_tokens=s.max_tokens,
        )
