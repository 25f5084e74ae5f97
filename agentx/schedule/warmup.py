"""The warm-up (rules 2 to 4 of :mod:`agentx.schedule`): stage A's primers, laid out once every
lane has its first tree so every tree reaches its ``t*`` together; stage B's per-lane budget of
requests with no delays; and when the boundary is reached."""

from __future__ import annotations

from collections.abc import Sequence

from agentx.schedule.options import LaneStart, ScheduleOptions
from agentx.schedule.spec import Split
from agentx.schedule.state import Kind, LaneRun, Primer, Timer, TimerQueue, TreeRun, Waiting


def lead_s(options: ScheduleOptions, tree: TreeRun, stream: int, turn: int) -> float:
    """How long before ``t*`` a primer's turn started in the recording (scaled, capped by the
    system idle cap; ``burst``: 0)."""
    if options.burst:
        return 0.0
    start = tree.spec.streams[stream].turns[turn].start_s
    lead = max(0.0, tree.t_star_s - start) * options.time_scale
    cap = options.system_idle_cap_s
    return min(lead, cap) if cap is not None else lead


class Warmup:
    def __init__(self, options: ScheduleOptions) -> None:
        self.options = options
        self.starting = False  # some lane's first tree is still to be supplied
        self.stage_b = False  # stage B has begun
        self.primers_left = 0  # primers laid out that have not returned
        self.lane_starts: list[LaneStart] = []
        self._primers: list[Primer] = []  # of the first trees, until they are laid out

    def first_tree(self, lane: LaneRun, tree: TreeRun, cut: Split, *, primed: bool) -> None:
        """``lane``'s first tree started at ``cut``: note where, and keep its primers (one per
        live stream with history; ``primed=False``: none, the warm-up is over)."""
        spec = tree.spec
        primers = []
        for i in range(len(spec.streams)):
            turn = cut.primer(i)
            if turn is not None and primed:
                primers.append(Primer(tree, i, turn, lead_s(self.options, tree, i, turn)))
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
        self._primers.extend(primers)

    def lay_out(
        self, now_s: float, waiting: Sequence[Waiting], *, stopped: bool
    ) -> list[Timer] | None:
        """Once every lane has its first tree (or none is left), the primers' timers: one that
        started ``lead`` before its ``t*`` is due at ``max(lead) - lead``. ``None``: not yet
        (or already laid out, or stopped); ``[]``: no primer, stage A is over."""
        if not self.starting or any(w.initial for w in waiting):
            return None
        self.starting = False
        primers, self._primers = self._primers, []
        if stopped:
            return None
        self.primers_left = len(primers)
        top = max((p.lead_s for p in primers), default=0.0)
        return [
            Timer(now_s + top - p.lead_s, Kind.PRIMER, p.tree, p.stream, p.turn) for p in primers
        ]

    def primer_returned(self) -> bool:
        """A primer ended; True when it was the last (stage A is over)."""
        self.primers_left -= 1
        return self.primers_left == 0

    def begin_stage_b(self) -> bool:
        """Stage A is over: True when stage B runs (a per-lane budget was asked for)."""
        if self.options.warmup > 0:
            self.stage_b = True
        return self.stage_b

    def over(self, queue: TimerQueue, *, in_flight: int, waiting: bool, stopped: bool) -> bool:
        """Whether the warm-up has ended: nothing of it in flight or due, no lane waiting for
        its first tree, and not stopped (a stop during the warm-up opens no measured window)."""
        if self.primers_left > 0 or in_flight > 0:
            return False
        if self.starting or waiting:
            return False  # a lane waits for its tree: its warm-up is still to come
        if stopped:
            return False
        if self.stage_b and queue.peek() is not None:
            return False
        # stage B has not begun (primers just ended: begin_stage_b runs it)
        return not (self.options.warmup > 0 and not self.stage_b)
