"""The replay's schedule: a pure, clock-agnostic model of what is sent and when.

**Contract** (``agentx replay`` drives it with real time and HTTP in :mod:`agentx.replay.lanes`;
``agentx simulate`` drives it with a virtual clock, :func:`agentx.schedule.virtual.run_virtual`):

- Input: trees (:class:`TreeSpec`: streams of turns with recorded start/end times, spawn and join
  structure; :func:`agentx.schedule.trees.tree_of` builds one from a replay plan's session) and
  :class:`ScheduleOptions`. No I/O, no asyncio, no wall clock: every method takes ``now_s``, the
  driver's clock in seconds (any origin; it must never go backwards).
- ``start(now_s)`` once; then, until ``done``:
  ``poll(now_s) -> list[Send]`` — the requests due by ``now_s``: send each now;
  ``complete(send.id, now_s, ok)`` — every :class:`Send` must be reported exactly once when it
  ends (failed or cancelled: ``ok=False``; streams go on after a failure);
  ``next_due_s()`` — when to poll next (``None``: wait for a completion);
  when ``phase`` is ``Phase.BOUNDARY`` (warm-up over, nothing in flight), do what the boundary
  needs (e.g. scrape the server's counters) and call ``begin_profiling(now_s)``;
  ``stop(now_s)`` — send nothing new (Ctrl-C, a failed gate); in-flight requests still complete.
- Output facts: ``Send`` (lane, tree index, instance for the cache-bust marker, stream, turn, due
  time, warm-up/primer flags, the answer length to ask for), ``profiling_started_s``,
  ``lane_starts`` (each lane's ``t*``), ``warmup_failures``, ``trees_started`` /
  ``trees_completed``, ``system_idle`` / ``trace_idle`` (idle-cap jumps).

The rules are in :mod:`agentx.schedule.engine`; docs/replay.md explains them and where they differ
from agentx-harness.
"""

from agentx.schedule.engine import LaneStart, Phase, Schedule, Send
from agentx.schedule.options import SPAWN_JOIN_RULES, ScheduleOptions, SpawnJoin
from agentx.schedule.spec import StreamSpec, TreeSpec, TurnSpec, with_joins

__all__ = [
    "SPAWN_JOIN_RULES",
    "LaneStart",
    "Phase",
    "Schedule",
    "ScheduleOptions",
    "Send",
    "SpawnJoin",
    "StreamSpec",
    "TreeSpec",
    "TurnSpec",
    "with_joins",
]
