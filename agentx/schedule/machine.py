"""The schedule's state and what each event does to it, in order: a due timer (a turn, a primer,
a tail, a watchdog, an arrival, the deadline), a request's end, a tree's start and end; after
each, the warm-up's end and the idle caps are checked. It composes the parts it runs:
:mod:`~agentx.schedule.lanes` (trees on demand, lanes waiting for one),
:mod:`~agentx.schedule.lanes` (lanes, tree instances), :mod:`~agentx.schedule.warmup` (primers,
stage B, the boundary), :mod:`~agentx.schedule.timing` (a tree's streams advancing),
:mod:`~agentx.schedule.lanes` (requests in flight). The driver's interface on top of it is
:class:`agentx.schedule.schedule.Schedule`.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentx.schedule.arrivals import Arrivals, OpenLoop
from agentx.schedule.lanes import Flights, Lanes, TreeSupply
from agentx.schedule.options import WARMUP_MAX_TOKENS, Phase, ScheduleOptions, Send
from agentx.schedule.spec import TreeSpec, start_cut
from agentx.schedule.state import Kind, LaneRun, StreamState, Timer, TimerQueue, TreeRun, Waiting
from agentx.schedule.timing import IdleCaps, Rules, Streams
from agentx.schedule.warmup import Warmup


class ScheduleMachine:
    """The state of a schedule and its transitions; :class:`~agentx.schedule.schedule.Schedule`
    is what a driver uses."""

    def __init__(
        self,
        trees: Sequence[TreeSpec] | int,
        options: ScheduleOptions,
        *,
        lanes: Sequence[int] | None = None,
        seed: int = 0,
        arrivals: Arrivals | None = None,
        recycle: bool | None = None,
    ) -> None:
        """``lanes``: the global numbers of the lanes this schedule runs (they seed ``t*``;
        default ``0 .. concurrency-1``); ``seed``: the run's (``t*`` draws); ``arrivals``: open
        loop, trees arrive as this process from the window's start, each on a free lane (the
        lanes cap concurrent trees) from its first request, else it waits for one
        (:mod:`agentx.schedule.arrivals`), not with a snapshot start or a warm-up; ``recycle``:
        take trees again once all were taken (default: the options' own rule)."""
        self.recycle = options.recycle if recycle is None else recycle
        self._supply = TreeSupply(trees, recycle=self.recycle)
        self.tree_count = self._supply.count
        self.options = options
        self.seed = seed
        lane_numbers = tuple(range(options.concurrency)) if lanes is None else tuple(lanes)
        self.phase = Phase.WARMUP
        self.stopped = False
        self.trees_started = 0
        self.trees_completed = 0
        self.profiling_started_s: float | None = None
        self.warmup_failures: list[Send] = []
        self._queue = TimerQueue()
        self._rules = Rules(options)
        self._idle = IdleCaps(options, self._queue)
        self._lanes = Lanes(lane_numbers, options.warmup, self._rules)
        self._warmup = Warmup(options)
        self._flights = Flights()
        self._streams = Streams(self._rules, self._queue)
        self._out: list[Send] = []
        self._idle_since_s: float | None = None
        self._touched: set[TreeRun] = set()  # trees an event changed (their idle cap to check)
        self._open: OpenLoop | None = None
        if arrivals is not None:
            if options.snapshot or options.warmup:
                raise ValueError("open-loop arrivals start trees from their first request")
            self._open = OpenLoop(arrivals, len(self._lanes.all))
        self._waiting = self._supply.waiting  # lanes waiting for a tree, in the order they asked
        self._finished: list[int] = []  # instances that ended, for the driver to free

    @property
    def in_flight(self) -> int:
        """Requests sent and not reported ended yet."""
        return self._flights.count

    @property
    def measured_sent(self) -> int:
        """Measured (not warm-up) requests sent so far."""
        return self._flights.measured

    def stop(self, now_s: float, *, deadline_s: float | None = None) -> None:
        """Send nothing new; what is in flight still ends (report it)."""
        if self._open is not None and not self.stopped:
            unsupplied = sum(w.arrival_due_s is not None for w in self._waiting)
            self._open.end(now_s, deadline_s, unsupplied)
        self.stopped = True
        self._queue.clear()
        self._waiting.clear()

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

        def start(w: Waiting, index: int, copy: int) -> bool:
            if not self._start_tree(w.lane, index, copy, now_s, initial=w.initial):
                return False
            if self._open is not None and w.arrival_due_s is not None:
                self._open.started(w.arrival_due_s, now_s)  # started once supplied
            return True

        self._supply.serve(start, stopped=self.stopped)

    def _start_tree(
        self, lane: LaneRun, index: int, copy: int, now_s: float, *, initial: bool
    ) -> bool:
        """Start tree ``index`` on ``lane``; False when there is nothing to replay in it (no
        rows, or nothing left after the snapshot instant: the harness skips it too)."""
        spec = self._supply.trees[index]
        cut = (
            None
            if spec is None
            else start_cut(spec, self.options, lane.lane, self.seed, first=initial)
        )
        if spec is None or cut is None:
            return False
        tree = self._lanes.instance(spec, index, copy, lane.lane, cut)
        lane.tree = tree
        self.trees_started += 1
        if initial:
            self._warmup.first_tree(lane, tree, cut, primed=self.phase is Phase.WARMUP)
        self._touched.add(tree)
        if self.phase is Phase.PROFILING:
            tree.idle_since_s = now_s
            self._reanchor(tree, now_s, self._rules.anchored(tree), now_s)
        elif self._warmup.stage_b:
            tree.accelerated = True
            self._evaluate(tree, now_s)
        return True

    def _tree_finished(self, tree: TreeRun, now_s: float) -> None:
        self.trees_completed += 1
        self._finished.append(tree.instance)
        self._idle.disarm(tree)
        lane = self._lanes.of(tree.lane)
        lane.tree = None
        if self.stopped:
            return
        if self._open is None:
            self._take(lane, now_s, initial=False)
        elif self._open.waiting:  # the first arrival waiting for a lane takes this one
            due_s = self._open.waiting.popleft()
            self._take(lane, now_s, initial=False, arrival_due_s=due_s)

    # -- open loop ----------------------------------------------------------------------------

    def _arrival(self, due_s: float, now_s: float) -> None:
        """A tree arrives (due at ``due_s``): on a free lane, else it waits for one."""
        assert self._open is not None
        if not self._open.accept(self.tree_count, recycle=self.recycle):
            return  # the trace is over: no more arrivals
        asked = {w.lane.lane for w in self._waiting}  # lanes waiting for their tree's supply
        lane = self._lanes.free(asked)
        if lane is None:
            self._open.wait(due_s)
        else:
            self._take(lane, now_s, initial=False, arrival_due_s=due_s)
        self._queue.push(Timer(self._open.next_due(due_s), Kind.ARRIVAL))

    # -- warm-up ------------------------------------------------------------------------------

    def _lay_out_warmup(self, now_s: float) -> None:
        timers = self._warmup.lay_out(now_s, self._waiting, stopped=self.stopped)
        if timers is None:
            return
        for timer in timers:
            self._queue.push(timer)
        if not timers:
            self._after_primers(now_s)

    def _after_primers(self, now_s: float) -> None:
        if self._warmup.begin_stage_b():
            for tree in self._lanes.trees():
                tree.accelerated = True
                self._evaluate(tree, now_s)
        self._check_warmup_over()

    def _check_warmup_over(self) -> None:
        if self.phase is Phase.WARMUP and self._warmup.over(
            self._queue, in_flight=self.in_flight, waiting=bool(self._waiting), stopped=self.stopped
        ):
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
        lane = self._lanes.of(tree.lane)
        if self.phase is Phase.WARMUP and lane.warm_left <= 0:
            stream.state = StreamState.HELD
            return
        if self._over_budget():
            self.stop(now_s)
            return
        if self.phase is Phase.WARMUP:
            lane.warm_left -= 1
        self._emit(tree, timer.stream, timer.turn, timer.at_s, primer=False)
        self._streams.sent(tree, timer.stream, timer.turn, now_s)
        self._evaluate(tree, now_s)
        if self._over_budget():
            self.stop(now_s)

    def _over_budget(self) -> bool:
        """``max_requests`` measured requests have been sent."""
        budget = self.options.max_requests
        return self.phase is Phase.PROFILING and budget is not None and self.measured_sent >= budget

    def _emit(self, tree: TreeRun, stream: int, turn: int, due_s: float, *, primer: bool) -> None:
        warmup = self.phase is not Phase.PROFILING
        max_tokens = WARMUP_MAX_TOKENS if warmup else None
        send = self._flights.send(
            tree, stream, turn, due_s, warmup=warmup, primer=primer, max_tokens=max_tokens
        )
        self._out.append(send)
        self._idle_since_s = None
        tree.idle_since_s = None
        self._idle.disarm(tree)

    def _turn_ended(self, tree: TreeRun, i: int, k: int, now_s: float) -> None:
        if self._streams.ended(tree, i, k, now_s, stopped=self.stopped):
            self._stream_done(tree, i, now_s, now_s)
        else:
            self._evaluate(tree, now_s)

    def _stream_done(self, tree: TreeRun, i: int, done_s: float, now_s: float) -> None:
        self._streams.done(tree, i, done_s)
        if tree.finished:
            self._tree_finished(tree, now_s)
        else:
            self._evaluate(tree, now_s)

    def _evaluate(self, tree: TreeRun, now_s: float) -> None:
        if not self.stopped:
            self._streams.schedule(tree, now_s)

    def _reanchor(
        self, tree: TreeRun, origin_s: float, firsts: list[tuple[int, float]], now_s: float
    ) -> None:
        """Place the tree on the replay clock (``origin_s`` = its ``t*``) and give the streams
        in ``firsts`` (stream, delay after ``t*``) their timers."""
        self._rules.place(tree, origin_s)
        if not self.stopped:
            self._streams.anchor(tree, origin_s, firsts, now_s)

    # -- idle caps ----------------------------------------------------------------------------

    def _enforce_idle_caps(self, now_s: float) -> None:
        touched, self._touched = self._touched, set()
        if self.phase is not Phase.PROFILING or self.stopped:
            return
        self._idle.check_trees(touched, now_s)
        # a lane waiting for its next tree will start it at once: the client is not idle
        if self.in_flight == 0 and self._idle_since_s is not None and not self._waiting:
            self._idle.check_system(self._lanes.trees(), self._idle_since_s, now_s)
