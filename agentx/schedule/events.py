"""What the schedule tells its driver: the phase, a request to send, where a lane started."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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
