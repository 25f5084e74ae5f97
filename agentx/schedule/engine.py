"""``Schedule``: the replay's rules as a discrete-event state machine (no clock, no I/O).

See :mod:`agentx.schedule` for the contract. The rules, in order of a run:

1. **Lanes take trees** in order (wrapping with ``recycle``). A lane's *first* tree starts at its
   sampled snapshot instant ``t*`` (:mod:`agentx.schedule.snapshot`); a tree taken later starts
   at its first request, with a new instance (and so a new cache-bust marker).
2. **Warm-up, stage A (primers)**: every live stream with history sends its last request before
   ``t*`` (``primer=True``, one-token answer). Spread: a primer that started ``lead`` seconds
   before its ``t*`` (x time scale, at most the system idle cap) is due at ``max(lead) - lead``,
   so every tree reaches ``t*`` together; ``burst``: all at once. Primers do not advance streams.
3. **Warm-up, stage B** (``warmup_per_lane`` > 0): after every primer has returned, each lane
   goes on replaying with no delays until it has sent that many requests; a stream due after the
   lane's budget is spent is held.
4. **Boundary**: when nothing of the warm-up is left in flight, the phase is ``BOUNDARY``; the
   driver does what it needs (scrape the server's counters) and calls :meth:`begin_profiling`.
5. **Measured window**: each tree is re-anchored on its recorded timeline: a stream whose next
   turn could go is due at ``origin + d(start - t*)``, where ``d`` scales (``time_scale``) and
   caps (``max_think_s``) a recorded delay, and ``origin`` puts the earliest such turn of all
   trees (``burst``: of each tree) at the window's start.
6. **Then, per stream**: turn ``k+1`` is due at ``join + d(start(k+1) - join_rec)``, where
   ``join`` is the latest of turn ``k``'s end and the end of every child stream that joins at
   ``k+1``, and ``join_rec`` the same instant in the recording: a parent waits for its blocking
   subagents, then its recorded think time *measured from the join*. A child's first turn is due
   at its spawning turn's end plus the recorded gap (at the spawning turn's *send* plus the
   recorded offset when the child started before that turn ended). A child's end is its last
   request's end plus its recorded wrap-up (a Weka subagent's ``duration_ms`` beyond its last
   request). ``spawn_join="harness"`` replaces these with agentx-harness's rule (docs/replay.md).
7. **Idle caps** (measured window): a tree that has had nothing in flight for
   ``trace_idle_cap_s`` has its timers pulled in, all by the same amount, so the earliest is due
   then (a watchdog, as the harness's: nothing moves before the cap has elapsed); when nothing at
   all is in flight, every timer moves the same way at once so the earliest is at most
   ``system_idle_cap_s`` after the moment the client went idle.
8. **Stop**: ``duration_s`` after the window's start, ``max_requests`` measured sends, or
   :meth:`stop`: nothing new is sent; the schedule is done when nothing is in flight.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from agentx.schedule.options import ScheduleOptions
from agentx.schedule.snapshot import Split, fresh, sample_t_star, split
from agentx.schedule.spec import TreeSpec
from agentx.schedule.state import (
    SHIFTABLE,
    Kind,
    LaneRun,
    StreamRun,
    StreamState,
    Timer,
    TimerQueue,
    TreeRun,
)


class Phase(Enum):
    WARMUP = "warmup"
    BOUNDARY = "boundary"  # warm-up over: the driver calls begin_profiling()
    PROFILING = "profiling"


@dataclass(frozen=True, slots=True)
class Send:
    """One request to send now. Report its end with :meth:`Schedule.complete` (always)."""

    id: int
    lane: int
    tree: int  # index into the schedule's trees
    copy: int  # instances of this tree taken before this one (0: the first)
    instance: int  # unique per tree instance: parent and subagents share it (the marker key)
    stream: int  # index into the tree's streams (0: the root)
    turn: int
    due_s: float  # when it was due (the dispatch lag is the send time minus this)
    warmup: bool
    primer: bool  # the last request before t* of a stream, re-sent to prime the cache
    max_tokens: int | None  # the answer length to ask for; None: the recorded one


@dataclass(frozen=True, slots=True)
class LaneStart:
    """Where a lane's first tree starts (for the run's log and summary)."""

    lane: int
    tree_id: str
    t_star_s: float  # seconds after the tree's first request
    position: float  # t* as a fraction of the tree's recorded span (0: its first request)
    primers: int


@dataclass(frozen=True, slots=True)
class Primer:
    tree: TreeRun
    stream: int
    turn: int
    lead_s: float  # how long before t* it was sent in the recording (scaled, capped)


@dataclass(slots=True)
class IdleJumps:
    """How often an idle cap pulled timers in, and by how much in total."""

    jumps: int = 0
    skipped_s: float = 0.0


class Schedule:
    """What is sent next, and when. Times are floats in seconds on the driver's clock.

    Drive it with: :meth:`start`, then repeatedly :meth:`poll` (sends due by ``now``),
    :meth:`complete` (a request ended), :meth:`next_due_s` (when to poll next), and
    :meth:`begin_profiling` once :attr:`phase` is ``BOUNDARY``; until :attr:`done`.
    """

    def __init__(self, trees: Sequence[TreeSpec], options: ScheduleOptions) -> None:
        for tree in trees:
            check_tree(tree)
        self.trees = tuple(trees)
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
        self.system_idle = IdleJumps()
        self.trace_idle = IdleJumps()
        self._queue = TimerQueue()
        self._lanes = [LaneRun(n, warm_left=options.warmup_per_lane) for n in options.lanes]
        self._cursor = 0
        self._instances = itertools.count()
        self._ids = itertools.count()
        self._flight: dict[int, tuple[Send, TreeRun]] = {}
        self._out: list[Send] = []
        self._primers_left = 0
        self._stage_b = False
        self._idle_since_s: float | None = None
        self._blockers = [_index_blockers(t) for t in trees]
        self._lane_of = {lane.lane: lane for lane in self._lanes}
        self._touched: set[TreeRun] = set()  # trees an event changed (their idle cap to check)

    # -- the driver's interface ---------------------------------------------------------------

    def start(self, now_s: float) -> None:
        """Give every lane its first tree and lay out the warm-up."""
        primers: list[Primer] = []
        for lane in self._lanes:
            primers.extend(self._take(lane, now_s, initial=True))
        self._primers_left = len(primers)
        if primers:
            top = max(p.lead_s for p in primers)
            for p in primers:
                self._push(Timer(now_s + top - p.lead_s, Kind.PRIMER, p.tree, p.stream, p.turn))
        else:
            self._after_primers(now_s)

    def poll(self, now_s: float) -> list[Send]:
        """Everything due by ``now_s``, in due order (the driver sends them now)."""
        while (timer := self._queue.pop_due(now_s)) is not None:
            if timer.tree is not None:
                timer.tree.timers.discard(timer)
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
        firsts = {tree.instance: self._anchored(tree) for tree in trees}
        everywhere = [f for fs in firsts.values() for _, f in fs]
        for tree in trees:
            own = [f for _, f in firsts[tree.instance]]
            t0 = min(own, default=0.0) if self.options.burst else min(everywhere, default=0.0)
            self._reanchor(tree, now_s - t0, firsts[tree.instance], now_s)
            self._touched.add(tree)
        if self.options.duration_s is not None:
            self._push(Timer(now_s + self.options.duration_s, Kind.DEADLINE))
        self._enforce_idle_caps(now_s)

    def stop(self, now_s: float) -> None:
        """Send nothing new; what is in flight still ends (report it)."""
        del now_s
        self.stopped = True
        self._queue.clear()
        for lane in self._lanes:
            if lane.tree is not None:
                lane.tree.timers.clear()

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
        return self.phase is Phase.PROFILING and self._queue.peek() is None

    # -- lanes and trees ----------------------------------------------------------------------

    def _take(self, lane: LaneRun, now_s: float, *, initial: bool) -> list[Primer]:
        """Give ``lane`` its next tree; returns its primers (first trees only)."""
        lane.tree = None
        n = len(self.trees)
        o = self.options
        for _ in range(max(n, 1)):
            if n == 0 or self.stopped or (self._cursor >= n and not o.recycle):
                break
            index, copy = self._cursor % n, self._cursor // n
            self._cursor += 1
            spec = self.trees[index]
            cut: Split = fresh(spec)
            if initial and o.snapshot:
                cut = split(spec, sample_t_star(spec, o.start_ratio, o.seed, lane.lane))
                if not cut.live:
                    continue  # nothing to replay from there: the harness skips it too
            tree = self._instance(spec, index, copy, lane.lane, cut)
            lane.tree = tree
            self.trees_started += 1
            return self._started(lane, tree, cut, now_s, initial=initial)
        lane.idle = True
        return []

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
                tree.spawn_rec_s[i] = self._spawn_rec(spec, i)
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
            self._reanchor(tree, now_s, self._anchored(tree), now_s)
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
        if tree.watchdog is not None:
            tree.watchdog.alive = False
            tree.watchdog = None
        lane = self._lane_of[tree.lane]
        lane.tree = None
        if not self.stopped:
            self._take(lane, now_s, initial=False)

    # -- warm-up ------------------------------------------------------------------------------

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
        if self._stage_b and self._queue.peek() is not None:
            return
        if self.options.warmup_per_lane > 0 and not self._stage_b:
            return  # stage B has not begun (primers just ended: _after_primers runs it)
        self.phase = Phase.BOUNDARY

    # -- streams ------------------------------------------------------------------------------

    def _fire(self, timer: Timer, now_s: float) -> None:
        if timer.kind is Kind.DEADLINE:
            self.stop(now_s)
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
        if tree.watchdog is not None:
            tree.watchdog.alive = False
            tree.watchdog = None
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
            tail = 0.0
            if not tree.accelerated and self.options.spawn_join == "recorded":
                tail = self._delay(spec.finish_s - spec.turns[-1].end_s)
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
                and self._spawns_on_send(tree.spec, c) == on_send
            ):
                yield c

    def _spawn(self, tree: TreeRun, c: int, now_s: float, *, on_send: bool) -> None:
        tree.streams[c].spawned = True
        tree.spawn_at_s[c] = now_s
        tree.spawn_rec_s[c] = self._spawn_rec(tree.spec, c, on_send=on_send)

    def _spawns_on_send(self, spec: TreeSpec, c: int) -> bool:
        """Whether child ``c`` starts when its spawning turn is sent (it began, in the
        recording, before that turn ended) rather than when it ends."""
        s = spec.streams[c]
        assert s.parent is not None and s.spawn_turn is not None
        spawn = spec.streams[s.parent].turns[s.spawn_turn]
        start = group_start(spec, c) if self.options.spawn_join == "harness" else s.start_s
        return start < spawn.end_s

    def _spawn_rec(self, spec: TreeSpec, i: int, *, on_send: bool | None = None) -> float:
        """The recorded instant a stream's spawn corresponds to."""
        s = spec.streams[i]
        if s.parent is None or s.spawn_turn is None:
            return spec.start_s
        spawn = spec.streams[s.parent].turns[s.spawn_turn]
        if on_send is None:
            on_send = self._spawns_on_send(spec, i)
        return spawn.start_s if on_send else spawn.end_s

    # -- when is a turn due -------------------------------------------------------------------

    def _deps_met(self, tree: TreeRun, i: int, k: int) -> bool:
        stream = tree.streams[i]
        if not stream.spawned:
            return False
        if stream.first_turn <= k - 1 and (i, k - 1) not in tree.end_at_s:
            return False  # its previous turn is not history and has not ended
        blockers = self._blockers[tree.index].get((i, k), ())
        return all(tree.streams[c].state is StreamState.DONE for c in blockers)

    def _evaluate(self, tree: TreeRun, now_s: float) -> None:
        """Give a timer to every waiting stream whose next turn can now be scheduled."""
        if self.stopped:
            return
        for i, stream in enumerate(tree.streams):
            k = stream.next_turn
            if stream.state is not StreamState.WAIT or k is None:
                continue
            if not self._deps_met(tree, i, k):
                continue
            due = now_s if tree.accelerated else max(now_s, self._due(tree, i, k))
            stream.state = StreamState.TIMER
            stream.timer = self._push(Timer(due, Kind.SEND, tree, i, k))

    def _due(self, tree: TreeRun, i: int, k: int) -> float:
        spec = tree.spec
        s = spec.streams[i]
        start = s.turns[k].start_s
        blockers = self._blockers[tree.index].get((i, k), ())
        if self.options.spawn_join == "harness":
            if k > 0:
                due = tree.end_at_s[(i, k - 1)] + self._delay(start - s.turns[k - 1].end_s)
            elif s.parent is None or s.spawn_turn is None:
                due = tree.spawn_at_s[i] + self._delay(start - tree.spawn_rec_s[i])
            else:
                spawn = spec.streams[s.parent].turns[s.spawn_turn]
                since = spawn.start_s if self._spawns_on_send(spec, i) else group_start(spec, i)
                due = tree.spawn_at_s[i] + self._delay(start - since)
            for c in blockers:
                done = tree.streams[c].done_at_s
                assert done is not None
                due = max(due, done)
            return due
        if k > 0:
            acts = [tree.end_at_s[(i, k - 1)]]
            recs = [s.turns[k - 1].end_s]
        else:
            acts = [tree.spawn_at_s[i]]
            recs = [tree.spawn_rec_s[i]]
        for c in blockers:
            done = tree.streams[c].done_at_s
            assert done is not None
            acts.append(done)
            recs.append(spec.streams[c].finish_s)
        return max(acts) + self._delay(start - max(recs))

    def _delay(self, recorded_s: float) -> float:
        d = max(0.0, recorded_s) * self.options.time_scale
        cap = self.options.max_think_s
        return min(d, cap) if cap is not None else d

    # -- the measured window's start ----------------------------------------------------------

    def _anchored(self, tree: TreeRun) -> list[tuple[int, float]]:
        """Streams that can go at the window's start, with their delay after ``t*``."""
        out = []
        for i, stream in enumerate(tree.streams):
            k = stream.next_turn
            if stream.state is not StreamState.WAIT or k is None or not stream.spawned:
                continue
            # its previous turn is history or ended in the warm-up: only a join can hold it
            blockers = self._blockers[tree.index].get((i, k), ())
            if all(tree.streams[c].state is StreamState.DONE for c in blockers):
                start = tree.spec.streams[i].turns[k].start_s
                out.append((i, self._delay(start - tree.t_star_s)))
        return out

    def _reanchor(
        self,
        tree: TreeRun,
        origin_s: float,
        firsts: list[tuple[int, float]],
        now_s: float,
    ) -> None:
        """Map the tree's past onto the replay clock (``origin_s`` = its ``t*``) and give the
        streams in ``firsts`` their timers."""
        scale = self.options.time_scale
        spec = tree.spec

        def virtual(rec_s: float) -> float:
            return origin_s + (rec_s - tree.t_star_s) * scale

        for i, stream in enumerate(tree.streams):
            s = spec.streams[i]
            if stream.state is StreamState.DONE:
                stream.done_at_s = virtual(s.finish_s)
            k = stream.next_turn
            if k is not None and k > 0:
                tree.end_at_s[(i, k - 1)] = virtual(s.turns[k - 1].end_s)
                tree.sent_at_s[(i, k - 1)] = virtual(s.turns[k - 1].start_s)
            if stream.spawned and i in tree.spawn_rec_s:
                tree.spawn_at_s[i] = virtual(tree.spawn_rec_s[i])
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
        if self.phase is not Phase.PROFILING or self.stopped:
            self._touched.clear()
            return
        o = self.options
        touched, self._touched = self._touched, set()
        if o.trace_idle_cap_s is not None:
            for tree in touched:
                if tree.in_flight or tree.idle_since_s is None or tree.finished:
                    continue
                deadline = tree.idle_since_s + o.trace_idle_cap_s
                if now_s + 1e-9 >= deadline:
                    self._cap(tree.timers, now_s, now_s, self.trace_idle)
                elif tree.watchdog is None or tree.watchdog.at_s != deadline:
                    if tree.watchdog is not None:
                        tree.watchdog.alive = False
                    tree.watchdog = self._push(Timer(deadline, Kind.WATCHDOG, tree))
        idle = self._idle_since_s
        if o.system_idle_cap_s is not None and self.in_flight == 0 and idle is not None:
            trees = [lane.tree for lane in self._lanes if lane.tree is not None]
            timers = {t for tree in trees for t in tree.timers}
            self._cap(timers, idle + o.system_idle_cap_s, now_s, self.system_idle)

    def _cap(self, timers: set[Timer], latest_s: float, now_s: float, tally: IdleJumps) -> None:
        live = [t for t in timers if t.alive and t.kind in SHIFTABLE]
        if not live:
            return
        shift = min(t.at_s for t in live) - max(latest_s, now_s)
        if shift <= 1e-9:
            return
        tally.jumps += 1
        tally.skipped_s += shift
        for t in live:
            assert t.tree is not None
            moved = self._queue.move(t, max(now_s, t.at_s - shift))
            t.tree.timers.discard(t)
            t.tree.timers.add(moved)
            stream = t.tree.streams[t.stream]
            if stream.timer is t:
                stream.timer = moved

    def _push(self, timer: Timer) -> Timer:
        self._queue.push(timer)
        if timer.tree is not None and timer.kind in SHIFTABLE:
            timer.tree.timers.add(timer)
        return timer


def group_start(spec: TreeSpec, c: int) -> float:
    """The earliest start of the children spawned and joined at the same turns as ``c`` (the
    harness starts a group's first child right at its spawning turn's end)."""
    s = spec.streams[c]
    return min(
        o.start_s
        for o in spec.streams
        if o.parent == s.parent and o.spawn_turn == s.spawn_turn and o.join_turn == s.join_turn
    )


def _index_blockers(tree: TreeSpec) -> dict[tuple[int, int], tuple[int, ...]]:
    out: dict[tuple[int, int], list[int]] = {}
    for c, s in enumerate(tree.streams):
        if s.parent is not None and s.join_turn is not None:
            out.setdefault((s.parent, s.join_turn), []).append(c)
    return {k: tuple(v) for k, v in out.items()}


def check_tree(tree: TreeSpec) -> None:
    """A tree the schedule can run: a root first, parents before children, turns in order."""
    if not tree.streams or tree.streams[0].parent is not None:
        raise ValueError(f"tree {tree.tree_id}: the first stream must be the root")
    for i, s in enumerate(tree.streams):
        if not s.turns:
            raise ValueError(f"tree {tree.tree_id}: stream {s.name} has no turns")
        if s.parent is not None:
            if not 0 <= s.parent < i or s.spawn_turn is None:
                raise ValueError(f"tree {tree.tree_id}: stream {s.name} has a bad parent")
            if not 0 <= s.spawn_turn < len(tree.streams[s.parent].turns):
                raise ValueError(f"tree {tree.tree_id}: stream {s.name} has a bad spawn turn")
