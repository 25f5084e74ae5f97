"""The lanes and the tree instances they replay: a lane replays one tree at a time, and each
tree it takes is a new instance (the key of its cache-bust marker)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from agentx.schedule.options import Send
from agentx.schedule.spec import Split, TreeSpec, check_tree
from agentx.schedule.state import LaneRun, StreamRun, StreamState, TreeRun, Waiting
from agentx.schedule.timing import Rules


class Lanes:
    def __init__(self, lanes: Sequence[int], warmup: int, rules: Rules) -> None:
        self.all = [LaneRun(n, warm_left=warmup) for n in lanes]
        self._of = {lane.lane: lane for lane in self.all}
        self._instances = itertools.count()
        self._rules = rules

    def of(self, lane: int) -> LaneRun:
        return self._of[lane]

    def trees(self) -> list[TreeRun]:
        """The trees the lanes replay now."""
        return [lane.tree for lane in self.all if lane.tree is not None]

    def free(self, asked: set[int]) -> LaneRun | None:
        """The first lane with no tree that has not asked for one already."""
        return next(
            (lane for lane in self.all if lane.tree is None and lane.lane not in asked), None
        )

    def instance(self, spec: TreeSpec, index: int, copy: int, lane: int, cut: Split) -> TreeRun:
        """A new instance of tree ``index`` on ``lane``, from the instant ``cut`` splits it at."""
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


# -- Requests in flight ----------------------------------------------------------------------------
# The requests in flight: each :class:`Send` the driver was told, with its tree, until the
# driver reports its end.


class Flights:
    def __init__(self) -> None:
        self._ids = itertools.count()
        self._flight: dict[int, tuple[Send, TreeRun]] = {}
        self.count = 0  # requests in flight
        self.measured = 0  # measured (not warm-up) requests sent so far

    def send(
        self,
        tree: TreeRun,
        stream: int,
        turn: int,
        due_s: float,
        *,
        warmup: bool,
        primer: bool,
        max_tokens: int | None,
    ) -> Send:
        """A new request of turn ``turn`` of ``stream`` of ``tree``, in flight from now."""
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
            max_tokens=max_tokens,
        )
        self._flight[send.id] = (send, tree)
        self.count += 1
        tree.in_flight += 1
        if not warmup:
            self.measured += 1
        return send

    def ended(self, send_id: int) -> tuple[Send, TreeRun]:
        """Request ``send_id`` is no longer in flight: it and its tree."""
        send, tree = self._flight.pop(send_id)
        self.count -= 1
        tree.in_flight -= 1
        return send, tree


# -- Trees on demand -------------------------------------------------------------------------------
# Trees on demand: which tree each waiting lane takes next, and which of those the driver has
# still to supply.
#
# Lanes that want a tree queue up (:class:`Waiting`) and are served in the order they asked, in
# trace order (wrapping with ``recycle``), while the next tree is known; a tree not supplied yet
# holds the queue until :meth:`TreeSupply.provide`, so the order is the one of the same trees
# given up front. A tree supplied as ``None`` has nothing to replay: the lane takes the next one.


class TreeSupply:
    """The trees supplied so far and the lanes waiting for one."""

    def __init__(self, trees: Sequence[TreeSpec] | int, *, recycle: bool) -> None:
        self.trees: dict[int, TreeSpec | None] = {}  # supplied so far (None: nothing to replay)
        if isinstance(trees, int):
            self.count = trees
        else:
            self.count = len(trees)
            for i, tree in enumerate(trees):
                check_tree(tree)
                self.trees[i] = tree
        self.recycle = recycle
        self.waiting: list[Waiting] = []  # lanes waiting for a tree, in the order they asked
        self._cursor = 0  # trees taken so far (copies included)
        self._tries = 0  # trees the first waiting lane skipped (nothing to replay in them)

    def wanted(self) -> list[int]:
        """The trees the waiting lanes will take next that are not supplied yet."""
        n = self.count
        if not self.waiting or n == 0:
            return []
        c = self._cursor
        end = c + len(self.waiting) if self.recycle else min(c + len(self.waiting), n)
        return list(dict.fromkeys(p % n for p in range(c, end) if p % n not in self.trees))

    def provide(self, index: int, tree: TreeSpec | None) -> None:
        if tree is not None:
            check_tree(tree)
        self.trees[index] = tree

    def serve(self, start: Callable[[Waiting, int, int], bool], *, stopped: bool) -> None:
        """Give the waiting lanes their trees while the next tree is known: ``start(waiting,
        index, copy)`` starts tree ``index`` (its ``copy``-th instance) on the lane, or says
        there is nothing to replay in it (the lane then tries the next one). A lane for which
        no tree is left is marked idle."""
        n = self.count
        while self.waiting:
            w = self.waiting[0]
            if n == 0 or stopped or (self._cursor >= n and not self.recycle) or self._tries >= n:
                w.lane.idle = True  # no tree left for it
                self.waiting.pop(0)
                self._tries = 0
                continue
            index, copy = self._cursor % n, self._cursor // n
            if index not in self.trees:
                return  # wanted: the driver supplies it
            self._cursor += 1
            self._tries += 1
            if start(w, index, copy):
                self.waiting.pop(0)
                self._tries = 0
