"""The schedule's runtime state: timers, tree instances on lanes, streams. Internal to the
schedule (:mod:`agentx.schedule.schedule` and the parts it composes); nothing here reads a clock."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from enum import Enum, auto

from agentx.schedule.spec import TreeSpec


class Kind(Enum):
    SEND = auto()  # a stream's next turn is due
    TAIL = auto()  # a stream's recorded end after its last request (a subagent's wrap-up)
    PRIMER = auto()  # a warm-up primer is due
    DEADLINE = auto()  # the end of the --duration window
    WATCHDOG = auto()  # a tree's idle cap: pull its timers in if it is still idle then
    ARRIVAL = auto()  # open loop: the next tree arrives


SHIFTABLE = (Kind.SEND, Kind.TAIL)  # replay timers the idle caps may pull earlier


class StreamState(Enum):
    WAIT = auto()  # its next turn waits for something (its spawn, its previous turn, a join)
    TIMER = auto()  # its next turn is due at a known time
    FLIGHT = auto()  # a request of it is in flight
    HELD = auto()  # due, but held back (the lane's warm-up budget is spent)
    TAIL = auto()  # its last request returned; its recorded end is still to come
    DONE = auto()


@dataclass(slots=True, eq=False)
class Timer:
    at_s: float
    kind: Kind
    tree: TreeRun | None = None
    stream: int = 0
    turn: int = 0
    alive: bool = True


class TimerQueue:
    """A min-heap of timers; cancelled or moved timers are dropped lazily."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()

    def push(self, timer: Timer) -> Timer:
        """Queue ``timer``; a replay timer is also tracked by its tree (for the idle caps)."""
        heapq.heappush(self._heap, (timer.at_s, next(self._seq), timer))
        if timer.tree is not None and timer.kind in SHIFTABLE:
            timer.tree.timers.add(timer)
        return timer

    def peek(self) -> Timer | None:
        while self._heap and not self._heap[0][2].alive:
            heapq.heappop(self._heap)
        return self._heap[0][2] if self._heap else None

    def pop_due(self, now_s: float) -> Timer | None:
        top = self.peek()
        if top is None or top.at_s > now_s:
            return None
        heapq.heappop(self._heap)
        top.alive = False
        if top.tree is not None:
            top.tree.timers.discard(top)
        return top

    def move(self, timer: Timer, at_s: float) -> Timer:
        """``timer`` due at ``at_s`` instead (its stream now points at the new one)."""
        timer.alive = False
        moved = self.push(Timer(at_s, timer.kind, timer.tree, timer.stream, timer.turn))
        if timer.tree is not None:
            timer.tree.timers.discard(timer)
            stream = timer.tree.streams[timer.stream]
            if stream.timer is timer:
                stream.timer = moved
        return moved

    def clear(self) -> None:
        for _, _, timer in self._heap:
            timer.alive = False
            if timer.tree is not None:
                timer.tree.timers.clear()
        self._heap.clear()


@dataclass(slots=True)
class StreamRun:
    next_turn: int | None  # the next turn to send; None: finished before t*
    spawned: bool
    first_turn: int  # turns before it are history (before t*): done, never sent
    state: StreamState
    timer: Timer | None = None
    done_at_s: float | None = None  # replay time it finished (recorded end included)


@dataclass(slots=True, eq=False)
class TreeRun:
    """One instance of a tree on a lane (``copy`` = how many instances of it came before)."""

    index: int  # into the schedule's trees
    copy: int
    instance: int  # unique in the schedule: the key of its cache-bust marker
    lane: int
    spec: TreeSpec
    t_star_s: float  # the recorded instant the measured replay resumes from
    streams: list[StreamRun]
    spawn_at_s: dict[int, float] = field(default_factory=dict)  # replay time a stream spawned
    spawn_rec_s: dict[int, float] = field(default_factory=dict)  # ... and the recorded instant
    end_at_s: dict[tuple[int, int], float] = field(default_factory=dict)  # turn -> replay end
    sent_at_s: dict[tuple[int, int], float] = field(default_factory=dict)
    in_flight: int = 0
    idle_since_s: float | None = None
    accelerated: bool = False  # warm-up stage B: no delays
    timers: set[Timer] = field(default_factory=set)  # its live replay (shiftable) timers
    watchdog: Timer | None = None  # its idle-cap check, while it is idle

    @property
    def finished(self) -> bool:
        return self.in_flight == 0 and all(s.state is StreamState.DONE for s in self.streams)


@dataclass(slots=True)
class LaneRun:
    lane: int
    tree: TreeRun | None = None
    warm_left: int = 0
    idle: bool = False  # no tree left for it


@dataclass(frozen=True, slots=True)
class Waiting:
    """A lane waiting for its next tree (lanes are served in the order they asked)."""

    lane: LaneRun
    initial: bool  # its first tree (a snapshot start may skip a tree)
    arrival_due_s: float | None = None  # open loop: when the arrival it serves was due


@dataclass(frozen=True, slots=True)
class Primer:
    tree: TreeRun
    stream: int
    turn: int
    lead_s: float  # how long before t* it was sent in the recording (scaled, capped)
