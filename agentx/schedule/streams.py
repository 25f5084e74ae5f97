"""A tree's streams as they advance (rule 6 of :mod:`agentx.schedule`): a turn sent or ended
spawns the child streams it spawns, a stream's last turn leaves its recorded wrap-up to run, and
a waiting stream whose next turn can now be scheduled gets its timer (when, from
:mod:`agentx.schedule.rules`). What the lanes and the phase make of it is the schedule's."""

from __future__ import annotations

from collections.abc import Iterable

from agentx.schedule.rules import Rules
from agentx.schedule.state import Kind, StreamState, Timer, TimerQueue, TreeRun


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
