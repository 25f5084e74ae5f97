"""Idle caps (measured window only), as agentx-harness defines them.

- Per tree (``trace_idle_cap_s``, ``replay_dependencies.py``): a watchdog armed when a tree goes
  idle (nothing in flight); if it is still idle when the cap has elapsed, all its pending timers
  move earlier by the same amount so the earliest is due then.
- Global (``system_idle_cap_s``, ``agentic_replay.py``): when nothing at all is in flight, every
  pending timer moves earlier by the same amount at once, so the earliest is due at most the cap
  after the moment the client went idle.

Both keep order and spacing; only replay timers move (sends and wrap-ups), never the deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentx.schedule.options import ScheduleOptions
from agentx.schedule.state import SHIFTABLE, Kind, Timer, TimerQueue, TreeRun

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
