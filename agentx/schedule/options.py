"""``ScheduleOptions``: the rules a replay follows, as one frozen value (no I/O, no clock), each
declared as the command-line option that sets it (``agentx replay``, ``sweep`` and ``simulate``
take them)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum, StrEnum

from agentx.core.errors import UsageError
from agentx.core.options import Panel, coerce_choices, option

WARMUP_MAX_TOKENS = 1  # every warm-up request asks for one token (as the harness does)
MAX_SECONDS = 1e9  # ~31 years: any duration, think cap or timeout beyond is a typo
MAX_TIME_SCALE = 1e6  # x recorded think times (inf would overflow the schedule)


class SpawnJoin(StrEnum):
    """When a subagent starts and its parent goes on: recorded gaps, or agentx-harness's rule."""

    RECORDED = "recorded"
    HARNESS = "harness"


def parse_ratio(text: str) -> tuple[float, float]:
    """``"0.25:0.75"`` -> ``(0.25, 0.75)``; one number ``R`` means ``R:R``."""
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        raise UsageError(
            f"--start-ratio must look like MIN:MAX (e.g. 0.25:0.75), got {text!r}"
        ) from None
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or not 0.0 <= parts[0] <= parts[1] <= 1.0:
        raise UsageError(f"--start-ratio {text}: need 0 <= MIN <= MAX <= 1")
    return parts[0], parts[1]


def format_ratio(ratio: tuple[float, float]) -> str:
    return f"{ratio[0]:g}:{ratio[1]:g}"


@dataclass(frozen=True, slots=True)
class ScheduleOptions:
    """Defaults reproduce a plain replay: every tree from its first request, recorded think
    times, no warm-up, no caps. Each field is the option of the same help text.

    - ``concurrency``: lanes (a driver may run a subset of them: ``Schedule(lanes=...)``); they
      take trees again once all were taken when ``duration_s`` or ``max_requests`` is set;
    - ``start_ratio``: ``(MIN, MAX)`` fractions of a tree's recorded span where its first lane
      starts (``(0, 0)``: at its first request);
    - ``time_scale`` multiplies every recorded delay (0 = back to back); ``max_think_s`` caps one;
    - ``warmup``: requests per lane sent back to back with one-token answers after the
      primers, before the measured window (the harness's ``warmup_requests_per_lane``);
    - ``burst``: primers all at once, and every lane's first measured request at the window's
      start (default: spread, keeping the recorded offsets between lanes);
    - ``duration_s`` / ``max_requests``: stop sending after this long (from the start of the
      measured window) / this many measured requests;
    - the idle caps: a tree with nothing in flight waits at most its cap for its next request;
      the system cap, the same when nothing at all is in flight (measured window only; the
      system cap also bounds the primers' spread);
    - ``spawn_join``: ``recorded`` (default: a subagent starts at its recorded gap after its
      spawning turn, a joining turn waits its recorded think time after the join) or
      ``harness`` (agentx-harness 1.0.12's rule, see docs/replay.md).
    """

    concurrency: int = option(
        1,
        "--concurrency",
        min=1,
        metavar="N",
        panel=Panel.LOAD,
        help="concurrent session lanes (recycled)",
    )
    time_scale: float = option(
        1.0,
        "--time-scale",
        min=0.0,
        metavar="F",
        panel=Panel.SCHEDULE,
        help="multiply recorded think time (0 = back to back)",
    )
    max_think_s: float | None = option(
        None,
        "--max-think",
        min=0.0,
        metavar="SECONDS",
        panel=Panel.SCHEDULE,
        help="cap one think time, SECONDS",
    )
    warmup: int = option(
        0,
        "--warmup",
        min=0,
        metavar="N",
        panel=Panel.SCHEDULE,
        help="requests per lane sent back to back with 1-token answers before measuring",
    )
    max_requests: int | None = option(
        None,
        "--max-requests",
        min=1,
        metavar="N",
        panel=Panel.LOAD,
        help="stop after N measured requests",
    )
    duration_s: float | None = option(
        None,
        "--duration",
        metavar="SECONDS",
        panel=Panel.LOAD,
        help="stop new requests after SECONDS, drain in-flight ones",
    )
    start_ratio: tuple[float, float] = option(
        (0.0, 0.0),
        "--start-ratio",
        parse=parse_ratio,
        metavar="MIN:MAX",
        panel=Panel.SCENARIO,
        show_default=False,
        help="each lane's first session starts at a sampled point of its recorded span "
        "[default: 0:0, its first request]",
    )
    burst: bool = option(
        False,
        "--burst",
        panel=Panel.SCENARIO,
        help="warm-up primers at once, and every lane's first measured request at once",
    )
    spawn_join: SpawnJoin = option(
        SpawnJoin.RECORDED,
        "--spawn-join",
        choices=SpawnJoin,
        panel=Panel.SCENARIO,
        help="recorded (think time measured from the join) or harness (agentx-harness's timing)",
    )
    trace_idle_cap_s: float | None = option(
        None,
        "--trace-idle-cap",
        min=0.0,
        metavar="SECONDS",
        panel=Panel.SCENARIO,
        help="a session with nothing in flight waits at most SECONDS for its next request",
    )
    system_idle_cap_s: float | None = option(
        None,
        "--system-idle-cap",
        min=0.0,
        metavar="SECONDS",
        panel=Panel.SCENARIO,
        help="with nothing in flight anywhere, the next request comes within SECONDS",
    )

    def __post_init__(self) -> None:
        coerce_choices(self)

    @property
    def recycle(self) -> bool:
        """Whether lanes take trees again once all were taken (a copy starts from its first
        request): a run bounded by time or by requests."""
        return self.duration_s is not None or self.max_requests is not None

    @property
    def snapshot(self) -> bool:
        """Whether first lanes start mid-trajectory (a start ratio other than 0:0)."""
        return self.start_ratio != (0.0, 0.0)

    def check(self) -> None:
        """Raise :class:`UsageError` on options no run could follow (what a user gave; a
        driver's share of them, e.g. a worker's part of ``max_requests``, is not checked)."""

        def need(ok: bool, message: str) -> None:
            if not ok:
                raise UsageError(message)

        def seconds(value: float | None, flag: str) -> None:
            need(
                value is None or (math.isfinite(value) and value <= MAX_SECONDS),
                f"{flag} must be a finite number of seconds up to {MAX_SECONDS:.0e}, got {value}",
            )

        need(self.concurrency >= 1, "--concurrency must be at least 1")
        seconds(self.duration_s, "--duration")
        seconds(self.max_think_s, "--max-think")
        seconds(self.trace_idle_cap_s, "--trace-idle-cap")
        seconds(self.system_idle_cap_s, "--system-idle-cap")
        need(
            math.isfinite(self.time_scale) and self.time_scale <= MAX_TIME_SCALE,
            f"--time-scale must be a finite factor up to {MAX_TIME_SCALE:.0e}, "
            f"got {self.time_scale}",
        )
        need(self.duration_s is None or self.duration_s > 0, "--duration must be positive")
        need(
            self.max_requests is None or self.max_requests >= 1, "--max-requests must be at least 1"
        )
        need(self.time_scale >= 0, "--time-scale must be >= 0")
        need(self.max_think_s is None or self.max_think_s >= 0, "--max-think must be >= 0")
        need(self.warmup >= 0, "--warmup must be >= 0")
        lo, hi = self.start_ratio
        need(0.0 <= lo <= hi <= 1.0, "--start-ratio must be MIN:MAX with 0 <= MIN <= MAX <= 1")
        need(
            self.trace_idle_cap_s is None or self.trace_idle_cap_s >= 0,
            "--trace-idle-cap must be >= 0",
        )
        need(
            self.system_idle_cap_s is None or self.system_idle_cap_s >= 0,
            "--system-idle-cap must be >= 0",
        )

    def describe(self) -> str:
        """The settings a scenario run prints, in one line's words."""

        def cap(v: float | None) -> str:
            return "none" if v is None else f"{v:g} s"

        return ", ".join(
            (
                f"duration {self.duration_s:g} s" if self.duration_s is not None else "no duration",
                f"concurrency {self.concurrency}",
                f"start ratio {format_ratio(self.start_ratio)}",
                f"warm-up primers{' (burst)' if self.burst else ''} + {self.warmup} requests/lane",
                f"trace idle cap {cap(self.trace_idle_cap_s)}",
                f"system idle cap {cap(self.system_idle_cap_s)}",
            )
        )


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
