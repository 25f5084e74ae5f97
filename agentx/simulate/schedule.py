"""Replay's own schedule (:mod:`agentx.schedule`, the pure, clock-agnostic rules ``agentx replay``'s
lanes drive in real time), driven by ``simulate`` in virtual time: the engine model says when
each request finishes, the schedule says what is sent next and when. One set of rules for both.

Lanes, think-time scaling and caps, start ratios, warm-up primers, spawn/join, idle caps and
stopping are the schedule's (docs/replay.md); :class:`agentx.schedule.ScheduleOptions` is the
part of replay's options that decides them, for both.

    sched = SharedSchedule(plan.sessions, ScheduleOptions(concurrency=2, time_scale=0))
    sched.start(0.0)
    while (t := sched.next_due_s()) is not None:   # (or when a request ends)
        for send in sched.poll(t):                 # send each at t ...
            ...
        sched.complete(send, t_end)                # ... and say when it finished
"""

from __future__ import annotations

from dataclasses import dataclass

from agentx.schedule import Phase, Schedule, ScheduleOptions
from agentx.schedule import Send as ScheduledSend
from agentx.workload.plan import SessionPlan, Sessions
from agentx.workload.trees import tree_of


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

    def __init__(self, sessions: Sessions, options: ScheduleOptions, seed: int = 0) -> None:
        self.sessions = sessions
        # trees supplied when a lane wants them, as replay's lanes do (a lazy plan reads then)
        self._schedule = Schedule(len(sessions), options, seed=seed)
        # the plans of the sessions supplied, while an instance of theirs may run: a plan asked
        # of ``sessions`` may be planned anew each time (an agentx trace's), not once a request
        self._plans: dict[int, SessionPlan] = {}
        self._trees: dict[int, int] = {}  # tree instance -> its tree, once it sent

    def _supply(self, now: float) -> None:
        while wanted := self._schedule.wanted:
            for i in wanted:
                plan = self.sessions.plan(i)
                if plan is not None:
                    self._plans[i] = plan
                self._schedule.provide(i, None if plan is None else tree_of(plan), now)
        for instance in self._schedule.drain_finished():  # (replay's lanes free its rows here)
            tree = self._trees.pop(instance, None)
            if tree is not None and tree not in self._trees.values():
                self._plans.pop(tree, None)

    def _plan(self, tree: int) -> SessionPlan:
        plan = self._plans.get(tree)
        if plan is None:  # a tree started again after its instances ended (recycled)
            plan = self._plans[tree] = self.sessions[tree]
        return plan

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
        self._trees[s.instance] = s.tree
        return Send(
            seq=s.id,
            lane=s.lane,
            instance=s.instance,
            session=self._plan(s.tree),
            copy_no=s.copy,
            thread=s.stream,
            turn=s.turn,
            warmup=s.warmup or s.primer,
            at_s=s.due_s,
            max_tokens=s.max_tokens,
        )
