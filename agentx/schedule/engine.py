"""``Schedule``: the replay's rules as a discrete-event state machine (no clock, no I/O).

The contract and the rules, in order of a run, are in :mod:`agentx.schedule`; the timing of a
turn in :mod:`agentx.schedule.rules`, the idle caps in :mod:`agentx.schedule.idle`.

Trees are given up front, or supplied on demand: ``Schedule(n, options)`` knows only that there
are ``n``; a lane whose next tree is not known yet waits (:attr:`Schedule.wanted`) until the
driver calls :meth:`Schedule.provide` (so a replay reads a session when a lane reaches it).
Waiting lanes are served in the order they asked and the warm-up is laid out once every lane
has its first tree, so the schedule is the one of the same trees given up front.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from agentx.schedule.arrivals import ArrivalLog, OpenLoop
from agentx.schedule.events import LaneStart, Phase, Send
from agentx.schedule.idle import IdleCaps, IdleJumps
from agentx.schedule.options import ScheduleOptions
from agentx.schedule.rules import Rules
from agentx.schedule.snapshot import Split, fresh, sample_t_star, split
from agentx.schedule.spec import TreeSpec, check_tree
from agentx.schedule.state import (
    Kind,
    LaneRun,
    Primer,
    StreamRun,
    StreamState,
    Timer,
    TimerQueue,
    TreeRun,
    Waiting,
)


class Schedule:
    """What is sent next, and when. Times are floats in seconds on the driver's clock.

    Drive it with: :meth:`start`, then repeatedly :meth:`poll` (sends due by ``now``),
    :meth:`complete` (a request ended), :meth:`next_due_s` (when to poll next), and
    :meth:`begin_profiling` once :attr:`phase` is ``BOUNDARY``; until :attr:`done`.

    ``trees``: every tree, or how many there are; then the driver supplies each one a lane
    waits for (:attr:`wanted`) with :meth:`provide`, and until it does nothing else moves for
    that lane (nor, before the first trees are all there, for the warm-up).
    """

    def __init__(self, trees: Sequence[TreeSpec] | int, options: ScheduleOptions) -> None:
        self._trees: dict[int, TreeSpec | None] = {}  # supplied so far (None: nothing to replay)
        if isinstance(trees, int):
            self.tree_count = trees
        else:
            self.tree_count = len(trees)
            for i, tree in enumerate(trees):
                check_tree(tree)
                self._trees[i] = tree
        self.options = options
        self.phase = Phase.WARMUP
        self.stopped = False
        self.in_flight = 0
        self.measured_sent = 0
        self.trees_started = 0
        self.trees_completed = 0
        self.profiling_started_s: float | None = None
        self.lane_starts: list[LaneStart] = []
        self.warmup_failures: list[Send] = []
        self._queue = TimerQueue()
        self._rules = Rules(options)
        self._idle = IdleCaps(options, self._queue)
        self._lanes = [LaneRun(n, warm_left=options.warmup_per_lane) for n in options.lanes]
        self._cursor = 0
        self._instances = itertools.count()
        self._ids = itertools.count()
        self._flight: dict[int, tuple[Send, TreeRun]] = {}
        self._out: list[Send] = []
        self._primers_left = 0
        self._stage_b = False
        self._idle_since_s: float | None = None
        self._lane_of = {lane.lane: lane for lane in self._lanes}
        self._touched: set[TreeRun] = set()  # trees an event changed (their idle cap to check)
        self._open: OpenLoop | None = None
        if options.arrivals is not None:
            if options.snapshot or options.warmup_per_lane:
                raise ValueError("open-loop arrivals start trees from their first request")
            self._open = OpenLoop(options.arrivals, len(self._lanes))
        self._waiting: list[Waiting] = []  # lanes waiting for a tree, in the order they asked
        self._tries = 0  # trees the first waiting lane skipped (nothing to replay in them)
        self._starting = False  # some lane's first tree is still to be supplied
        self._first_primers: list[Primer] = []
        self._finished: list[int] = []  # instances that ended, for the driver to free

    # -- the driver's interface ---------------------------------------------------------------

    def start(self, now_s: float) -> None:
        """Give every lane its first tree and lay out the warm-up (once every first tree has
        been supplied). Open loop: trees arrive later, from the measured window's start."""
        self._starting = True
        if self._open is None:
            self._waiting.extend(Waiting(lane, initial=True) for lane in self._lanes)
        self._serve(now_s)
        self._lay_out_warmup(now_s)

    @property
    def wanted(self) -> list[int]:
        """The trees waiting lanes will take next that are not supplied yet (supply them with
        :meth:`provide`; the first one holds every waiting lane)."""
        n = self.tree_count
        if not self._waiting or self.stopped or n == 0:
            return []
        c = self._cursor
        end = c + len(self._waiting) if self.options.recycle else min(c + len(self._waiting), n)
        return list(dict.fromkeys(p % n for p in range(c, end) if p % n not in self._trees))

    def provide(self, index: int, tree: TreeSpec | None, now_s: float) -> None:
        """Supply tree ``index`` (``None``: it has nothing to replay; lanes take the next one).
        A tree may be supplied before a lane wants it; each is supplied once."""
        if tree is not None:
            check_tree(tree)
        self._trees[index] = tree
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
        send, tree = self._flight.pop(send_id)
        self.in_flight -= 1
        tree.in_flight -= 1
        if self.in_flight == 0:
            self._idle_since_s = now_s
        if tree.in_flight == 0:
            tree.idle_since_s = now_s
        if send.warmup and not ok:
            self.warmup_failures.append(send)
        self._touched.add(tree)
        if send.primer:
            self._primers_left -= 1
            if self._primers_left == 0 and not self.stopped:
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
        trees = [lane.tree for lane in self._lanes if lane.tree is not None]
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
            self._push(Timer(now_s + self.options.duration_s, Kind.DEADLINE))
        if self._open is not None:
            self._push(Timer(self._open.begin(now_s), Kind.ARRIVAL))
        self._enforce_idle_caps(now_s)

    def stop(self, now_s: float, *, deadline_s: float | None = None) -> None:
        """Send nothing new; what is in flight still ends (report it)."""
        if self._open is not None and not self.stopped:
            unsupplied = sum(w.arrival_due_s is not None for w in self._waiting)
            self._open.end(now_s, deadline_s, unsupplied)
        self.stopped = True
        self._queue.clear()
        self._waiting.clear()

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
        return sum(1 for lane in self._lanes if lane.tree is not None)

    @property
    def done(self) -> bool:
        if self.in_flight:
            return False
        if self.stopped:
            return True
        return self.phase is Phase.PROFILING and self._queue.peek() is None and not self._waiting

    # -- lanes and trees ----------------------------------------------------------------------

    def _take(
        self, lane: LaneRun, now_s: float, *, initial: bool, arrival_due_s: float | None = None
    ) -> None:
        """``lane`` wants its next tree (open loop: for an arrival due at ``arrival_due_s``)."""
        lane.tree = None
        self._waiting.append(Waiting(lane, initial, arrival_due_s))
        self._serve(now_s)

    def _serve(self, now_s: float) -> None:
        """Give the waiting lanes their trees in the order they asked, in trace order, while
        the next tree is known (a first tree's primers are kept for the warm-up's layout)."""
        n = self.tree_count
        while self._waiting:
            w = self._waiting[0]
            if (
                n == 0
                or self.stopped
                or (self._cursor >= n and not self.options.recycle)
                or self._tries >= n
            ):
                w.lane.idle = True  # no tree left for it
                self._waiting.pop(0)
                self._tries = 0
                continue
            index, copy = self._cursor % n, self._cursor // n
            if index not in self._trees:
                return  # wanted: the driver supplies it
            self._cursor += 1
            self._tries += 1
            primers = self._start_tree(w.lane, index, copy, now_s, initial=w.initial)
            if primers is not None:
                self._waiting.pop(0)
                self._tries = 0
                self._first_primers.extend(primers)
                if self._open is not None and w.arrival_due_s is not None:
                    self._open.started(w.arrival_due_s, now_s)  # started once supplied

    def _start_tree(
        self, lane: LaneRun, index: int, copy: int, now_s: float, *, initial: bool
    ) -> list[Primer] | None:
        """Start tree ``index`` on ``lane``; ``None`` when there is nothing to replay in it
        (no rows, or nothing left after the snapshot instant: the harness skips it too)."""
        o = self.options
        spec = self._trees[index]
        if spec is None:
            return None
        cut: Split = fresh(spec)
        if initial and o.snapshot:
            cut = split(spec, sample_t_star(spec, o.start_ratio, o.seed, lane.lane))
            if not cut.live:
                return None
        tree = self._instance(spec, index, copy, lane.lane, cut)
        lane.tree = tree
        self.trees_started += 1
        return self._started(lane, tree, cut, now_s, initial=initial)

    def _instance(self, spec: TreeSpec, index: int, copy: int, lane: int, cut: Split) -> TreeRun:
        streams = [
            StreamRun(
                k,
                sp,
                len(s.turns) if k is None else k,
                StreamState.DONE if k is None else StreamState.WAIT,
            )
            for k, sp, s in zip(cut.next_turn, cut.spawned, spec.streams, strict=True)
        ]
        tree = TreeRun(index, copy, next(self._instances), lane, spec, cut.t_star_s, streams)
        for i in range(len(spec.streams)):
            if cut.spawned[i]:
                tree.spawn_rec_s[i] = self._rules.spawn_rec(spec, i)
        return tree

    def _started(
        self, lane: LaneRun, tree: TreeRun, cut: Split, now_s: float, *, initial: bool
    ) -> list[Primer]:
        spec = tree.spec
        primers: list[Primer] = []
        if initial:
            for i in range(len(spec.streams)):
                turn = cut.primer(i)
                if turn is not None and self.phase is Phase.WARMUP:
                    primers.append(Primer(tree, i, turn, self._lead(tree, i, turn)))
            span = spec.last_start_s - spec.start_s
            self.lane_starts.append(
                LaneStart(
                    lane.lane,
                    spec.tree_id,
                    cut.t_star_s - spec.start_s,
                    (cut.t_star_s - spec.start_s) / span if span > 0 else 0.0,
                    len(primers),
                )
            )
        self._touched.add(tree)
        if self.phase is Phase.PROFILING:
            tree.idle_since_s = now_s
            self._reanchor(tree, now_s, self._rules.anchored(tree), now_s)
        elif self._stage_b:
            tree.accelerated = True
            self._evaluate(tree, now_s)
        return primers

    def _lead(self, tree: TreeRun, stream: int, turn: int) -> float:
        if self.options.burst:
            return 0.0
        start = tree.spec.streams[stream].turns[turn].start_s
        lead = max(0.0, tree.t_star_s - start) * self.options.time_scale
        cap = self.options.system_idle_cap_s
        return min(lead, cap) if cap is not None else lead

    def _tree_finished(self, tree: TreeRun, now_s: float) -> None:
        self.trees_completed += 1
        self._finished.append(tree.instance)
        self._idle.disarm(tree)
        lane = self._lane_of[tree.lane]
        lane.tree = None
        if self.stopped:
            return
        if self._open is None:
            self._take(lane, now_s, initial=False)
        elif self._open.waiting:  # the first arrival waiting for a lane takes this one
            self._arrived(lane, self._open.waiting.popleft(), now_s)

    # -- open loop ----------------------------------------------------------------------------

    def _arrival(self, due_s: float, now_s: float) -> None:
        """A tree arrives (due at ``due_s``): on a free lane, else it waits for one."""
        assert self._open is not None
        n = self.tree_count
        if n == 0 or (not self.options.recycle and self._open.accepted >= n):
            return  # the trace is over: no more arrivals
        self._open.accepted += 1
        asked = {w.lane.lane for w in self._waiting}  # lanes waiting for their tree's supply
        lane = next(
            (lane for lane in self._lanes if lane.tree is None and lane.lane not in asked), None
        )
        if lane is None:
            self._open.wait(due_s)
        else:
            self._arrived(lane, due_s, now_s)
        self._push(Timer(self._open.next_due(due_s), Kind.ARRIVAL))

    def _arrived(self, lane: LaneRun, due_s: float, now_s: float) -> None:
        self._take(lane, now_s, initial=False, arrival_due_s=due_s)

    # -- warm-up ------------------------------------------------------------------------------

    def _lay_out_warmup(self, now_s: float) -> None:
        """Once every lane has its first tree (or none is left), time the primers: one that
        started ``lead`` before its t* is due at ``max(lead) - lead``."""
        if not self._starting or any(w.initial for w in self._waiting):
            return
        self._starting = False
        primers, self._first_primers = self._first_primers, []
        if self.stopped:
            return
        self._primers_left = len(primers)
        if primers:
            top = max(p.lead_s for p in primers)
            for p in primers:
                self._push(Timer(now_s + top - p.lead_s, Kind.PRIMER, p.tree, p.stream, p.turn))
        else:
            self._after_primers(now_s)

    def _after_primers(self, now_s: float) -> None:
        if self.options.warmup_per_lane > 0:
            self._stage_b = True
            for lane in self._lanes:
                if lane.tree is not None:
                    lane.tree.accelerated = True
                    self._evaluate(lane.tree, now_s)
        self._check_warmup_over()

    def _check_warmup_over(self) -> None:
        if self.phase is not Phase.WARMUP or self._primers_left > 0 or self.in_flight > 0:
            return
        if self._starting or self._waiting:
            return  # a lane waits for its tree: its warm-up is still to come
        if self.stopped:
            return  # stopped during the warm-up (a signal, a failed request): no measured window
        if self._stage_b and self._queue.peek() is not None:
            return
        if self.options.warmup_per_lane > 0 and not self._stage_b:
            return  # stage B has not begun (primers just ended: _after_primers runs it)
        self.phase = Phase.BOUNDARY

    # -- streams ------------------------------------------------------------------------------

    def _fire(self, timer: Timer, now_s: float) -> None:
        if timer.kind is Kind.DEADLINE:
            self.stop(now_s, deadline_s=timer.at_s)
            return
        if timer.kind is Kind.ARRIVAL:
            self._arrival(timer.at_s, now_s)
            return
        tree = timer.tree
        assert tree is not None
        if timer.kind is Kind.WATCHDOG:
            tree.watchdog = None  # the idle-cap check runs at the end of the poll
            return
        if timer.kind is Kind.PRIMER:
            self._emit(tree, timer.stream, timer.turn, timer.at_s, primer=True)
            return
        stream = tree.streams[timer.stream]
        stream.timer = None
        if timer.kind is Kind.TAIL:
            self._stream_done(tree, timer.stream, timer.at_s, now_s)
            return
        lane = self._lane_of[tree.lane]
        if self.phase is Phase.WARMUP and lane.warm_left <= 0:
            stream.state = StreamState.HELD
            return
        budget = self.options.max_requests
        if self.phase is Phase.PROFILING and budget is not None and self.measured_sent >= budget:
            self.stop(now_s)
            return
        if self.phase is Phase.WARMUP:
            lane.warm_left -= 1
        self._emit(tree, timer.stream, timer.turn, timer.at_s, primer=False)
        stream.state = StreamState.FLIGHT
        stream.next_turn = timer.turn + 1
        tree.sent_at_s[(timer.stream, timer.turn)] = now_s
        for child in self._children_of(tree, timer.stream, timer.turn, on_send=True):
            self._spawn(tree, child, now_s, on_send=True)
        self._evaluate(tree, now_s)
        if self.phase is Phase.PROFILING and budget is not None and self.measured_sent >= budget:
            self.stop(now_s)

    def _emit(self, tree: TreeRun, stream: int, turn: int, due_s: float, *, primer: bool) -> None:
        warmup = self.phase is not Phase.PROFILING
        send = Send(
            id=next(self._ids),
            lane=tree.lane,
            tree=tree.index,
            copy=tree.copy,
            instance=tree.instance,
            stream=stream,
            turn=turn,
            due_s=due_s,
            warmup=warmup,
            primer=primer,
            max_tokens=self.options.warmup_max_tokens if warmup else None,
        )
        self._flight[send.id] = (send, tree)
        self._out.append(send)
        self.in_flight += 1
        tree.in_flight += 1
        self._idle_since_s = None
        tree.idle_since_s = None
        self._idle.disarm(tree)
        if not warmup:
            self.measured_sent += 1

    def _turn_ended(self, tree: TreeRun, i: int, k: int, now_s: float) -> None:
        tree.end_at_s[(i, k)] = now_s
        stream = tree.streams[i]
        for child in self._children_of(tree, i, k, on_send=False):
            self._spawn(tree, child, now_s, on_send=False)
        spec = tree.spec.streams[i]
        if k + 1 < len(spec.turns):
            stream.state = StreamState.WAIT
        else:
            tail = self._rules.tail(tree, i)
            if tail > 0 and not self.stopped:
                stream.state = StreamState.TAIL
                stream.timer = self._push(Timer(now_s + tail, Kind.TAIL, tree, i, k))
            else:
                self._stream_done(tree, i, now_s, now_s)
                return
        self._evaluate(tree, now_s)

    def _stream_done(self, tree: TreeRun, i: int, done_s: float, now_s: float) -> None:
        stream = tree.streams[i]
        stream.state = StreamState.DONE
        stream.done_at_s = done_s
        if tree.finished:
            self._tree_finished(tree, now_s)
        else:
            self._evaluate(tree, now_s)

    def _children_of(self, tree: TreeRun, i: int, k: int, *, on_send: bool) -> Iterable[int]:
        for c, s in enumerate(tree.spec.streams):
            if (
                s.parent == i
                and s.spawn_turn == k
                and not tree.streams[c].spawned
                and self._rules.spawns_on_send(tree.spec, c) == on_send
            ):
                yield c

    def _spawn(self, tree: TreeRun, c: int, now_s: float, *, on_send: bool) -> None:
        tree.streams[c].spawned = True
        tree.spawn_at_s[c] = now_s
        tree.spawn_rec_s[c] = self._rules.spawn_rec(tree.spec, c, on_send=on_send)

    # -- when is a turn due -------------------------------------------------------------------

    def _evaluate(self, tree: TreeRun, now_s: float) -> None:
        """Give a timer to every waiting stream whose next turn can now be scheduled."""
        if self.stopped:
            return
        for i, stream in enumerate(tree.streams):
            k = stream.next_turn
            if stream.state is not StreamState.WAIT or k is None:
                continue
            if not self._rules.deps_met(tree, i, k):
                continue
            due = now_s if tree.accelerated else max(now_s, self._rules.due(tree, i, k))
            stream.state = StreamState.TIMER
            stream.timer = self._push(Timer(due, Kind.SEND, tree, i, k))

    # -- the measured window's start ----------------------------------------------------------

    def _reanchor(
        self, tree: TreeRun, origin_s: float, firsts: list[tuple[int, float]], now_s: float
    ) -> None:
        """Place the tree on the replay clock (``origin_s`` = its ``t*``) and give the streams
        in ``firsts`` (stream, delay after ``t*``) their timers."""
        self._rules.place(tree, origin_s)
        if self.stopped:
            return
        for i, delay in firsts:
            stream = tree.streams[i]
            k = stream.next_turn
            assert k is not None
            stream.state = StreamState.TIMER
            stream.timer = self._push(Timer(max(now_s, origin_s + delay), Kind.SEND, tree, i, k))

    # -- idle caps ----------------------------------------------------------------------------

    def _enforce_idle_caps(self, now_s: float) -> None:
        touched, self._touched = self._touched, set()
        if self.phase is not Phase.PROFILING or self.stopped:
            return
        self._idle.check_trees(touched, now_s)
        # a lane waiting for its next tree will start it at once: the client is not idle
        if self.in_flight == 0 and self._idle_since_s is not None and not self._waiting:
            trees = [lane.tree for lane in self._lanes if lane.tree is not None]
            self._idle.check_system(trees, self._idle_since_s, now_s)

    def _push(self, timer: Timer) -> Timer:
        return self._queue.push(timer)
