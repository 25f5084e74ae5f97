"""``ScheduleOptions``: the rules a replay follows, as one frozen value (no I/O, no clock)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from agentx.schedule.arrivals import Arrivals

SpawnJoin = Literal["recorded", "harness"]
SPAWN_JOIN_RULES: tuple[SpawnJoin, ...] = ("recorded", "harness")
WARMUP_MAX_TOKENS = 1  # every warm-up request asks for one token (as the harness does)


@dataclass(frozen=True, slots=True)
class ScheduleOptions:
    """Defaults reproduce a plain replay: every tree from its first request, recorded think
    times, no warm-up, no caps.

    - ``lanes``: the global numbers of the lanes this schedule runs (they seed ``t*``);
    - ``recycle``: take trees again once all were taken (a copy starts from its first request);
    - ``start_ratio``: ``(MIN, MAX)`` fractions of a tree's recorded span where its first lane
      starts (``(0, 0)``: at its first request);
    - ``time_scale`` multiplies every recorded delay (0 = back to back); ``max_think_s`` caps one;
    - ``warmup_per_lane``: requests per lane sent back to back with one-token answers after the
      primers, before the measured window (the harness's ``warmup_requests_per_lane``);
    - ``burst``: primers all at once, and every lane's first measured request at the window's
      start (default: spread, keeping the recorded offsets between lanes);
    - ``duration_s`` / ``max_requests``: stop sending after this long (from the start of the
      measured window) / this many measured requests;
    - ``trace_idle_cap_s``: a tree with nothing in flight waits at most this long for its next
      request; ``system_idle_cap_s``: the same when nothing at all is in flight (measured window
      only; the system cap also bounds the primers' spread);
    - ``spawn_join``: ``recorded`` (default: a subagent starts at its recorded gap after its
      spawning turn, a joining turn waits its recorded think time after the join) or
      ``harness`` (agentx-harness 1.0.12's rule, see docs/replay.md);
    - ``arrivals``: open loop: trees arrive as this process from the window's start, each on a
      free lane (the lanes cap concurrent trees) from its first request, else it waits for one
      (:mod:`agentx.schedule.arrivals`); not with a snapshot start or a warm-up.
    """

    lanes: tuple[int, ...] = (0,)
    recycle: bool = False
    start_ratio: tuple[float, float] = (0.0, 0.0)
    seed: int = 0
    time_scale: float = 1.0
    max_think_s: float | None = None
    warmup_per_lane: int = 0
    burst: bool = False
    duration_s: float | None = None
    max_requests: int | None = None
    trace_idle_cap_s: float | None = None
    system_idle_cap_s: float | None = None
    spawn_join: SpawnJoin = "recorded"
    warmup_max_tokens: int = WARMUP_MAX_TOKENS
    arrivals: Arrivals | None = None  # open loop (agentx.schedule.arrivals); None: closed loop

    @property
    def snapshot(self) -> bool:
        """Whether first lanes start mid-trajectory (a start ratio other than 0:0)."""
        return self.start_ratio != (0.0, 0.0)


# -- What the schedule tells its driver ------------------------------------------------------------
# What the schedule tells its driver: the phase, a request to send, where a lane started.


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
