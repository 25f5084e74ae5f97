"""The replay's schedule: a pure, clock-agnostic model of what is sent and when.

**Contract** (``agentx replay`` drives it with real time and HTTP in :mod:`agentx.replay.lanes`;
``agentx simulate`` drives it with a virtual clock, :func:`agentx.schedule.virtual.run_virtual`):

- Input: trees (:class:`TreeSpec`: streams of turns with recorded start/end times, spawn and join
  structure; :func:`agentx.workload.trees.tree_of` builds one from a replay plan's session) and
  :class:`ScheduleOptions` (the lanes, the seed and open-loop arrivals are the driver's:
  ``Schedule(trees, options, lanes=..., seed=..., arrivals=...)``). No I/O, no asyncio, no wall clock: every method takes ``now_s``, the
  driver's clock in seconds (any origin; it must never go backwards).
- ``start(now_s)`` once; then, until ``done``:
  ``poll(now_s) -> list[Send]`` — the requests due by ``now_s``: send each now;
  ``complete(send.id, now_s, ok)`` — every :class:`Send` must be reported exactly once when it
  ends (failed or cancelled: ``ok=False``; streams go on after a failure);
  ``next_due_s()`` — when to poll next (``None``: wait for a completion);
  when ``phase`` is ``Phase.BOUNDARY`` (warm-up over, nothing in flight), do what the boundary
  needs (e.g. scrape the server's counters) and call ``begin_profiling(now_s)``;
  ``stop(now_s)`` — send nothing new (Ctrl-C, a failed gate); in-flight requests still complete.
- Trees on demand: ``Schedule(n, options)`` knows only how many trees there are. A lane that
  takes a tree not supplied yet waits; ``wanted`` lists those trees, and
  ``provide(index, tree_or_None, now_s)`` supplies one (``None``: nothing to replay in it, the
  lane takes the next). The warm-up is laid out once every lane has its first tree, so the
  schedule is the same as with every tree given up front. ``drain_finished()`` returns the tree
  instances that ended (the driver frees what it loaded for them).
- Output facts: ``Send`` (lane, tree index, instance for the cache-bust marker, stream, turn, due
  time, warm-up/primer flags, the answer length to ask for), ``profiling_started_s``,
  ``lane_starts`` (each lane's ``t*``), ``warmup_failures``, ``trees_started`` /
  ``trees_completed``, ``system_idle`` / ``trace_idle`` (idle-cap jumps).

docs/replay.md explains the rules and where they differ from agentx-harness. The rules, in order
of a run (:mod:`agentx.schedule.schedule` runs them):

1. **Lanes take trees** in order (wrapping with ``recycle``). A lane's *first* tree starts at its
   sampled snapshot instant ``t*`` (:mod:`agentx.schedule.spec`); a tree taken later starts
   at its first request, with a new instance (and so a new cache-bust marker).
2. **Warm-up, stage A (primers)**: every live stream with history sends its last request before
   ``t*`` (``primer=True``, one-token answer). Spread: a primer that started ``lead`` seconds
   before its ``t*`` (x time scale, at most the system idle cap) is due at ``max(lead) - lead``,
   so every tree reaches ``t*`` together; ``burst``: all at once. Primers do not advance streams.
3. **Warm-up, stage B** (``warmup`` > 0): after every primer has returned, each lane
   goes on replaying with no delays until it has sent that many requests; a stream due after the
   lane's budget is spent is held.
4. **Boundary**: when nothing of the warm-up is left in flight, the phase is ``BOUNDARY``; the
   driver does what it needs (scrape the server's counters) and calls :meth:`begin_profiling`.
5. **Measured window**: each tree is re-anchored on its recorded timeline: a stream whose next
   turn could go is due at ``origin + d(start - t*)``, where ``d`` scales (``--time-scale``) and
   caps (``--max-think``) a recorded delay, and ``origin`` puts the earliest such turn of all
   trees (``burst``: of each tree) at the window's start.
6. **Then, per stream**: turn ``k+1`` is due at ``join + d(start(k+1) - join_rec)``, where
   ``join`` is the latest of turn ``k``'s end and the end of every child stream that joins at
   ``k+1``, and ``join_rec`` the same instant in the recording: a parent waits for its blocking
   subagents, then its recorded think time *measured from the join*. A child's first turn is due
   at its spawning turn's end plus the recorded gap (at the spawning turn's *send* plus the
   recorded offset when the child started before that turn ended). A child's end is its last
   request's end plus its recorded wrap-up (a Weka subagent's ``duration_ms`` beyond its last
   request). ``spawn_join="harness"`` replaces these with agentx-harness's rule (docs/replay.md).
   From stage B on, a turn also waits for the turns of the other streams of its scope that had
   ended before it started in the recording (a flat chain and its main agent:
   :func:`agentx.schedule.spec.barriers`).
7. **Idle caps** (measured window): a tree that has had nothing in flight for the trace idle
   cap (``--trace-idle-cap``) has its timers pulled in, all by the same amount, so the earliest is due
   then (a watchdog, as the harness's: nothing moves before the cap has elapsed); when nothing at
   all is in flight, every timer moves the same way at once so the earliest is at most the
   system idle cap after the moment the client went idle.
8. **Stop**: ``duration_s`` after the window's start, ``max_requests`` measured sends, or
   :meth:`stop`: nothing new is sent; the schedule is done when nothing is in flight.
"""

from agentx.schedule.options import LaneStart, Phase, ScheduleOptions, Send, SpawnJoin
from agentx.schedule.schedule import Schedule
from agentx.schedule.spec import StreamSpec, TreeSpec, TurnSpec, with_joins

__all__ = [
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
