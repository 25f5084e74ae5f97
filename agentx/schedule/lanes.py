"""The lanes and the tree instances they replay: a lane replays one tree at a time, and each
tree it takes is a new instance (the key of its cache-bust marker)."""

from __future__ import annotations

import itertools

from agentx.schedule.options import ScheduleOptions
from agentx.schedule.rules import Rules
from agentx.schedule.snapshot import Split
from agentx.schedule.spec import TreeSpec
from agentx.schedule.state import LaneRun, StreamRun, StreamState, TreeRun


class Lanes:
    def __init__(self, options: ScheduleOptions, rules: Rules) -> None:
        self.all = [LaneRun(n, warm_left=options.warmup_per_lane) for n in options.lanes]
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
