"""When a turn is due: the timing rules of :mod:`agentx.schedule.schedule`, as functions of a tree
instance's state (no clock: times are the driver's, passed in and stored on the tree).

``recorded`` (default): a turn is due at ``join + d(start - join_rec)``, where ``join`` is the
latest end among its dependencies (the stream's previous turn, the children joining at it, or,
for a stream's first turn, its spawn) and ``join_rec`` the same instant in the recording; ``d``
scales (``time_scale``) and caps (``max_think_s``) a recorded delay. ``harness``: agentx-harness
1.0.12's rule (a child right at its group's spawn, a joining turn at the later of its own gap
and its children's ends). In both, a turn also waits for the turns of the other streams of its
scope that had ended before it started in the recording (:func:`agentx.schedule.spec.barriers`:
a flat chain and its main agent), from the warm-up's stage B on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentx.schedule.options import ScheduleOptions, SpawnJoin
from agentx.schedule.spec import (
    Barriers,
    Blockers,
    TreeSpec,
    barriers,
    group_start,
    index_blockers,
)
from agentx.schedule.state import SHIFTABLE, Kind, StreamState, Timer, TimerQueue, TreeRun


class Rules:
    def __init__(self, options: ScheduleOptions) -> None:
        self.options = options
        self.blockers: dict[int, Blockers] = {}  # per tree index, made when first needed
        self.barriers: dict[int, Barriers] = {}  # the same

    def delay(self, recorded_s: float) -> float:
        """A recorded delay as replayed: scaled, capped, never negative."""
        d = max(0.0, recorded_s) * self.options.time_scale
        cap = self.options.max_think_s
        return min(d, cap) if cap is not None else d

    def joining(self, tree: TreeRun, i: int, k: int) -> tuple[int, ...]:
        blockers = self.blockers.get(tree.index)
        if blockers is None:
            blockers = self.blockers[tree.index] = index_blockers(tree.spec)
        return blockers.get((i, k), ())

    def ordered_after(self, tree: TreeRun, i: int, k: int) -> bool:
        """Whether every turn of another stream that turn ``k`` of stream ``i`` waits for (its
        barrier) is history or has ended."""
        found = self.barriers.get(tree.index)
        if found is None:
            found = self.barriers[tree.index] = barriers(tree.spec)
        return all(
            m < tree.streams[j].first_turn or (j, m) in tree.end_at_s
            for j, m in found.get((i, k), ())
        )

    # -- spawn -----------------------------------------------------------------------------

    def spawns_on_send(self, spec: TreeSpec, c: int) -> bool:
        """Whether child ``c`` starts when its spawning turn is sent (it began, in the
        recording, before that turn ended) rather than when that turn ends."""
        s = spec.streams[c]
        assert s.parent is not None and s.spawn_turn is not None
        spawn = spec.streams[s.parent].turns[s.spawn_turn]
        start = group_start(spec, c) if self.options.spawn_join is SpawnJoin.HARNESS else s.start_s
        return start < spawn.end_s

    def spawn_rec(self, spec: TreeSpec, i: int, *, on_send: bool | None = None) -> float:
        """The recorded instant a stream's spawn corresponds to."""
        s = spec.streams[i]
        if s.parent is None or s.spawn_turn is None:
            return spec.start_s
        spawn = spec.streams[s.parent].turns[s.spawn_turn]
        if on_send is None:
            on_send = self.spawns_on_send(spec, i)
        return spawn.start_s if on_send else spawn.end_s

    # -- a stream's next turn --------------------------------------------------------------

    def deps_met(self, tree: TreeRun, i: int, k: int) -> bool:
        stream = tree.streams[i]
        if not stream.spawned:
            return False
        if stream.first_turn <= k - 1 and (i, k - 1) not in tree.end_at_s:
            return False  # its previous turn is not history and has not ended
        if not all(tree.streams[c].state is StreamState.DONE for c in self.joining(tree, i, k)):
            return False
        return self.ordered_after(tree, i, k)

    def due(self, tree: TreeRun, i: int, k: int) -> float:
        """When turn ``k`` of stream ``i`` is due (its dependencies have all ended)."""
        if self.options.spawn_join is SpawnJoin.HARNESS:
            return self._due_harness(tree, i, k)
        spec = tree.spec
        s = spec.streams[i]
        if k > 0:
            acts, recs = [tree.end_at_s[(i, k - 1)]], [s.turns[k - 1].end_s]
        else:
            acts, recs = [tree.spawn_at_s[i]], [tree.spawn_rec_s[i]]
        for c in self.joining(tree, i, k):
            done = tree.streams[c].done_at_s
            assert done is not None
            acts.append(done)
            recs.append(spec.streams[c].finish_s)
        return max(acts) + self.delay(s.turns[k].start_s - max(recs))

    def _due_harness(self, tree: TreeRun, i: int, k: int) -> float:
        spec = tree.spec
        s = spec.streams[i]
        start = s.turns[k].start_s
        if k > 0:
            due = tree.end_at_s[(i, k - 1)] + self.delay(start - s.turns[k - 1].end_s)
        elif s.parent is None or s.spawn_turn is None:
            due = tree.spawn_at_s[i] + self.delay(start - tree.spawn_rec_s[i])
        else:
            spawn = spec.streams[s.parent].turns[s.spawn_turn]
            since = spawn.start_s if self.spawns_on_send(spec, i) else group_start(spec, i)
            due = tree.spawn_at_s[i] + self.delay(start - since)
        for c in self.joining(tree, i, k):
            done = tree.streams[c].done_at_s
            assert done is not None
            due = max(due, done)
        return due

    def tail(self, tree: TreeRun, i: int) -> float:
        """How long after its last request a stream ends (a subagent's recorded wrap-up)."""
        if tree.accelerated or self.options.spawn_join is SpawnJoin.HARNESS:
            return 0.0
        s = tree.spec.streams[i]
        return self.delay(s.finish_s - s.turns[-1].end_s)

    # -- the measured window's start -------------------------------------------------------

    def anchored(self, tree: TreeRun) -> list[tuple[int, float]]:
        """Streams that can go at the window's start, with their delay after ``t*``: their
        previous turn is history or ended in the warm-up, so only a join can hold them (or a
        barrier: such a stream counts for the window's origin, as the harness counts it, and
        goes once the turns it waits for have ended, :meth:`Streams.anchor`)."""
        out = []
        for i, stream in enumerate(tree.streams):
            k = stream.next_turn
            if stream.state is not StreamState.WAIT or k is None or not stream.spawned:
                continue
            if all(tree.streams[c].state is StreamState.DONE for c in self.joining(tree, i, k)):
                start = tree.spec.streams[i].turns[k].start_s
                out.append((i, self.delay(start - tree.t_star_s)))
        return out

    def place(self, tree: TreeRun, origin_s: float) -> None:
        """Map the tree's past onto the replay clock, ``origin_s`` being its ``t*``: what ended
        before the window (history, warm-up) is given the time it would have had."""
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


# -- Idle caps -------------------------------------------------------------------------------------
# Idle caps (measured window only), as agentx-harness defines them.
#
# - Per tree (``trace_idle_cap_s``, ``replay_dependencies.py``): a watchdog armed when a tree goes
#   idle (nothing in flight); if it is still idle when the cap has elapsed, all its pending timers
#   move earlier by the same amount so the earliest is due then.
# - Global (``system_idle_cap_s``, ``agentic_replay.py``): when nothing at all is in flight, every
#   pending timer moves earlier by the same amount at once, so the earliest is due at most the cap
#   after the moment the client went idle.
#
# Both keep order and spacing; only replay timers move (sends and wrap-ups), never the deadline.


EPSILON_S = 1e-9


@dataclass(slots=True)
class IdleJumps:
    """How often an idle cap pulled timers in, and by how much in total."""

    jumps: int = 0
    skipped_s: float = 0.0


class IdleCaps:
    def __init__(self, options: ScheduleOptions, queue: TimerQueue) -> None:
        self.trace_cap_s = options.trace_idle_cap_s
        self.system_cap_s = options.system_idle_cap_s
        self.queue = queue
        self.system = IdleJumps()
        self.trace = IdleJumps()

    def check_trees(self, trees: Iterable[TreeRun], now_s: float) -> None:
        """The per-tree cap, for trees an event changed: arm, or act on, their watchdog."""
        cap = self.trace_cap_s
        if cap is None:
            return
        for tree in trees:
            if tree.in_flight or tree.idle_since_s is None or tree.finished:
                continue
            deadline = tree.idle_since_s + cap
            if now_s + EPSILON_S >= deadline:
                self._pull_in(tree.timers, now_s, now_s, self.trace)
            elif tree.watchdog is None or tree.watchdog.at_s != deadline:
                self.disarm(tree)
                tree.watchdog = self.queue.push(Timer(deadline, Kind.WATCHDOG, tree))

    def check_system(self, trees: Iterable[TreeRun], idle_since_s: float, now_s: float) -> None:
        """The global cap; call it when nothing is in flight."""
        if self.system_cap_s is None:
            return
        timers = {t for tree in trees for t in tree.timers}
        self._pull_in(timers, idle_since_s + self.system_cap_s, now_s, self.system)

    @staticmethod
    def disarm(tree: TreeRun) -> None:
        if tree.watchdog is not None:
            tree.watchdog.alive = False
            tree.watchdog = None

    def _pull_in(self, timers: set[Timer], latest_s: float, now_s: float, tally: IdleJumps) -> None:
        live = [t for t in timers if t.alive and t.kind in SHIFTABLE]
        if not live:
            return
        shift = min(t.at_s for t in live) - max(latest_s, now_s)
        if shift <= EPSILON_S:
            return
        tally.jumps += 1
        tally.skipped_s += shift
        for t in live:
            self.queue.move(t, max(now_s, t.at_s - shift))


# -- Streams advancing -----------------------------------------------------------------------------
# A tree's streams as they advance (rule 6 of :mod:`agentx.schedule`): a turn sent or ended
# spawns the child streams it spawns, a stream's last turn leaves its recorded wrap-up to run, and
# a waiting stream whose next turn can now be scheduled gets its timer (when, from
# :mod:`agentx.schedule.timing`). What the lanes and the phase make of it is the schedule's.


class Streams:
    def __init__(self, rules: Rules, queue: TimerQueue) -> None:
        self._rules = rules
        self._queue = queue

    def sent(self, tree: TreeRun, i: int, k: int, now_s: float) -> None:
        """Turn ``k`` of stream ``i`` was sent at ``now_s``."""
        stream = tree.streams[i]
        stream.state = StreamState.FLIGHT
        stream.next_turn = k + 1
        tree.sent_at_s[(i, k)] = now_s
        for child in self._children_of(tree, i, k, on_send=True):
            self._spawn(tree, child, now_s, on_send=True)

    def ended(self, tree: TreeRun, i: int, k: int, now_s: float, *, stopped: bool) -> bool:
        """Turn ``k`` of stream ``i`` ended at ``now_s``; True when the stream is done now (its
        last turn, and no wrap-up to wait for)."""
        tree.end_at_s[(i, k)] = now_s
        stream = tree.streams[i]
        for child in self._children_of(tree, i, k, on_send=False):
            self._spawn(tree, child, now_s, on_send=False)
        if k + 1 < len(tree.spec.streams[i].turns):
            stream.state = StreamState.WAIT
            return False
        tail = self._rules.tail(tree, i)
        if tail > 0 and not stopped:
            stream.state = StreamState.TAIL
            stream.timer = self._queue.push(Timer(now_s + tail, Kind.TAIL, tree, i, k))
            return False
        return True

    @staticmethod
    def done(tree: TreeRun, i: int, done_s: float) -> None:
        """Stream ``i`` finished at ``done_s`` (its recorded wrap-up included)."""
        stream = tree.streams[i]
        stream.state = StreamState.DONE
        stream.done_at_s = done_s

    def schedule(self, tree: TreeRun, now_s: float) -> None:
        """Give a timer to every waiting stream whose next turn can now be scheduled."""
        for i, stream in enumerate(tree.streams):
            k = stream.next_turn
            if stream.state is not StreamState.WAIT or k is None:
                continue
            if not self._rules.deps_met(tree, i, k):
                continue
            due = now_s if tree.accelerated else max(now_s, self._rules.due(tree, i, k))
            stream.state = StreamState.TIMER
            stream.timer = self._queue.push(Timer(due, Kind.SEND, tree, i, k))

    def anchor(
        self, tree: TreeRun, origin_s: float, firsts: list[tuple[int, float]], now_s: float
    ) -> None:
        """Give the streams in ``firsts`` (stream, delay after ``t*``) their timers, ``t*``
        being at ``origin_s`` on the replay clock."""
        for i, delay in firsts:
            stream = tree.streams[i]
            k = stream.next_turn
            assert k is not None
            if not self._rules.ordered_after(tree, i, k):
                continue  # it waits for turns of other streams: scheduled once they end
            stream.state = StreamState.TIMER
            at_s = max(now_s, origin_s + delay)
            stream.timer = self._queue.push(Timer(at_s, Kind.SEND, tree, i, k))

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
