"""``Schedule``: the replay's rules as a discrete-event state machine (no clock, no I/O).

The contract and the rules, in order of a run, are in :mod:`agentx.schedule`; the timing of a
turn in :mod:`agentx.schedule.timing`, the idle caps in :mod:`agentx.schedule.timing`. The state and
the order of events (trees starting and ending, the phases, stopping) are
:mod:`~agentx.schedule.machine`'s, with the parts it composes; what is here is the driver's
interface to them.

Trees are given up front, or supplied on demand: ``Schedule(n, options)`` knows only that there
are ``n``; a lane whose next tree is not known yet waits (:attr:`Schedule.wanted`) until the
driver calls :meth:`Schedule.provide` (so a replay reads a session when a lane reaches it).
Waiting lanes are served in the order they asked and the warm-up is laid out once every lane
has its first tree, so the schedule is the one of the same trees given up front.
"""

from __future__ import annotations

from agentx.schedule.arrivals import ArrivalLog
from agentx.schedule.machine import ScheduleMachine
from agentx.schedule.options import LaneStart, Phase, Send
from agentx.schedule.spec import TreeSpec
from agentx.schedule.state import Kind, StreamState, Timer, Waiting
from agentx.schedule.timing import IdleJumps


class Schedule(ScheduleMachine):
    """What is sent next, and when. Times are floats in seconds on the driver's clock.

    Drive it with: :meth:`start`, then repeatedly :meth:`poll` (sends due by ``now``),
    :meth:`complete` (a request ended), :meth:`next_due_s` (when to poll next), and
    :meth:`begin_profiling` once :attr:`phase` is ``BOUNDARY``; until :attr:`done`.
    :meth:`stop`, :attr:`in_flight` and :attr:`measured_sent`, which the events use too, are
    :class:`ScheduleMachine`'s.

    ``trees``: every tree, or how many there are; then the driver supplies each one a lane
    waits for (:attr:`wanted`) with :meth:`provide`, and until it does nothing else moves for
    that lane (nor, before the first trees are all there, for the warm-up).
    """

    @property
    def lane_starts(self) -> list[LaneStart]:
        """Where each lane's first tree started (its ``t*``)."""
        return self._warmup.lane_starts

    # -- the driver's interface ---------------------------------------------------------------

    def start(self, now_s: float) -> None:
        """Give every lane its first tree and lay out the warm-up (once every first tree has
        been supplied). Open loop: trees arrive later, from the measured window's start."""
        self._warmup.starting = True
        if self._open is None:
            self._waiting.extend(Waiting(lane, initial=True) for lane in self._lanes.all)
        self._serve(now_s)
        self._lay_out_warmup(now_s)

    @property
    def wanted(self) -> list[int]:
        """The trees waiting lanes will take next that are not supplied yet (supply them with
        :meth:`provide`; the first one holds every waiting lane)."""
        return [] if self.stopped else self._supply.wanted()

    def provide(self, index: int, tree: TreeSpec | None, now_s: float) -> None:
        """Supply tree ``index`` (``None``: it has nothing to replay; lanes take the next one).
        A tree may be supplied before a lane wants it; each is supplied once."""
        self._supply.provide(index, tree)
        self._serve(now_s)
        self._lay_out_warmup(now_s)
        self._check_warmup_over()
        self._enforce_idle_caps(now_s)

    def drain_finished(self) -> list[int]:
        """The tree instances that ended since the last call (the driver frees what it held
        for them)."""
        out, self._finished = self._finished, []
        return out

    def poll(self, now_s: float) -> list[Send]:
        """Everything due by ``now_s``, in due order (the driver sends them now)."""
        while (timer := self._queue.pop_due(now_s)) is not None:
            if timer.tree is not None:
                self._touched.add(timer.tree)
            self._fire(timer, now_s)
        self._check_warmup_over()
        self._enforce_idle_caps(now_s)
        out, self._out = self._out, []
        return out

    def complete(self, send_id: int, now_s: float, ok: bool = True) -> None:
        """Request ``send_id`` ended at ``now_s`` (``ok=False``: it failed; the stream goes on)."""
        send, tree = self._flights.ended(send_id)
        if self.in_flight == 0:
            self._idle_since_s = now_s
        if tree.in_flight == 0:
            tree.idle_since_s = now_s
        if send.warmup and not ok:
            self.warmup_failures.append(send)
        self._touched.add(tree)
        if send.primer:
            if self._warmup.primer_returned() and not self.stopped:
                self._after_primers(now_s)
        else:
            self._turn_ended(tree, send.stream, send.turn, now_s)
        self._check_warmup_over()
        self._enforce_idle_caps(now_s)

    def next_due_s(self) -> float | None:
        """When something is next due (``None``: only completions can change anything)."""
        top = self._queue.peek()
        return top.at_s if top is not None else None

    def begin_profiling(self, now_s: float) -> None:
        """Start the measured window (call once :attr:`phase` is ``BOUNDARY``)."""
        assert self.phase is Phase.BOUNDARY
        self.phase = Phase.PROFILING
        self.profiling_started_s = now_s
        self._idle_since_s = now_s
        trees = self._lanes.trees()
        for tree in trees:
            tree.accelerated = False
            tree.idle_since_s = now_s
            for stream in tree.streams:
                if stream.state is StreamState.HELD:
                    stream.state = StreamState.WAIT
        firsts = {tree.instance: self._rules.anchored(tree) for tree in trees}
        everywhere = [f for fs in firsts.values() for _, f in fs]
        for tree in trees:
            own = [f for _, f in firsts[tree.instance]]
            t0 = min(own, default=0.0) if self.options.burst else min(everywhere, default=0.0)
            self._reanchor(tree, now_s - t0, firsts[tree.instance], now_s)
            self._touched.add(tree)
        if self.options.duration_s is not None:
            self._queue.push(Timer(now_s + self.options.duration_s, Kind.DEADLINE))
        if self._open is not None:
            self._queue.push(Timer(self._open.begin(now_s), Kind.ARRIVAL))
        self._enforce_idle_caps(now_s)

    def arrival_log(self) -> ArrivalLog | None:
        """Open loop: what arrived and when it started (``None`` in closed loop)."""
        return self._open.log() if self._open is not None else None

    @property
    def system_idle(self) -> IdleJumps:
        """The global idle cap's jumps."""
        return self._idle.system

    @property
    def trace_idle(self) -> IdleJumps:
        """The per-tree idle cap's jumps."""
        return self._idle.trace

    @property
    def active_lanes(self) -> int:
        """Lanes replaying a tree now."""
        return len(self._lanes.trees())

    @property
    def done(self) -> bool:
        if self.in_flight:
            return False
        if self.stopped:
            return True
        return self.phase is Phase.PROFILING and self._queue.peek() is None and not self._waiting
