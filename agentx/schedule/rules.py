"""When a turn is due: the timing rules of :mod:`agentx.schedule.engine`, as functions of a tree
instance's state (no clock: times are the driver's, passed in and stored on the tree).

``recorded`` (default): a turn is due at ``join + d(start - join_rec)``, where ``join`` is the
latest end among its dependencies (the stream's previous turn, the children joining at it, or,
for a stream's first turn, its spawn) and ``join_rec`` the same instant in the recording; ``d``
scales (``time_scale``) and caps (``max_think_s``) a recorded delay. ``harness``: agentx-harness
1.0.12's rule (a child right at its group's spawn, a joining turn at the later of its own gap
and its children's ends).
"""

from __future__ import annotations

from agentx.schedule.options import ScheduleOptions
from agentx.schedule.spec import Blockers, TreeSpec, group_start, index_blockers
from agentx.schedule.state import StreamState, TreeRun


class Rules:
    def __init__(self, options: ScheduleOptions) -> None:
        self.options = options
        self.blockers: dict[int, Blockers] = {}  # per tree index, made when first needed

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

    # -- spawn -----------------------------------------------------------------------------

    def spawns_on_send(self, spec: TreeSpec, c: int) -> bool:
        """Whether child ``c`` starts when its spawning turn is sent (it began, in the
        recording, before that turn ended) rather than when that turn ends."""
        s = spec.streams[c]
        assert s.parent is not None and s.spawn_turn is not None
        spawn = spec.streams[s.parent].turns[s.spawn_turn]
        start = group_start(spec, c) if self.options.spawn_join == "harness" else s.start_s
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
        return all(tree.streams[c].state is StreamState.DONE for c in self.joining(tree, i, k))

    def due(self, tree: TreeRun, i: int, k: int) -> float:
        """When turn ``k`` of stream ``i`` is due (its dependencies have all ended)."""
        if self.options.spawn_join == "harness":
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
        if tree.accelerated or self.options.spawn_join == "harness":
            return 0.0
        s = tree.spec.streams[i]
        return self.delay(s.finish_s - s.turns[-1].end_s)

    # -- the measured window's start -------------------------------------------------------

    def anchored(self, tree: TreeRun) -> list[tuple[int, float]]:
        """Streams that can go at the window's start, with their delay after ``t*``: their
        previous turn is history or ended in the warm-up, so only a join can hold them."""
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
