"""Open-loop arrivals: when new trees (sessions) arrive, whatever the server's answers do.

Closed-loop lanes (the default) take a lane's next tree when its previous one has finished; the
offered load then depends on the server. Given arrivals (``Schedule(..., arrivals=...)``) the
schedule is open loop, as AIPerf, GuideLLM and ``vllm bench serve`` users expect: trees arrive as a seeded
renewal process from the start of the measured window; each takes a free lane (the lanes are
the cap on concurrent trees) and starts from its first request, or waits for a lane, first come
first served, so the achieved rate falls below the offered one (:class:`ArrivalLog` says how
much).

Processes (``kind``), all with mean gap ``1 / rate``:

- ``poisson``: exponential gaps (coefficient of variation 1);
- ``gamma``: gamma gaps of shape ``burstiness`` (vLLM's ``--burstiness``): CV ``1/sqrt(B)``,
  below 1 burstier than Poisson, above 1 steadier, 1 = Poisson;
- ``constant``: every gap exactly ``1 / rate``.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import StrEnum


class ArrivalError(ValueError):
    """An impossible arrival process (the replay turns it into a usage error)."""


class ArrivalProcess(StrEnum):
    """``--arrival``: the renewal process open-loop arrivals follow."""

    POISSON = "poisson"
    GAMMA = "gamma"
    CONSTANT = "constant"


def arrival_process(value: object) -> ArrivalProcess:
    """``"gamma"`` -> :attr:`ArrivalProcess.GAMMA`, or :class:`ArrivalError`."""
    try:
        return ArrivalProcess(str(value))
    except ValueError:
        raise ArrivalError(
            f"--arrival must be one of {', '.join(ArrivalProcess)}: {value!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class Arrivals:
    """A renewal process of ``rate_per_s`` arrivals per second, seeded."""

    rate_per_s: float
    kind: ArrivalProcess = ArrivalProcess.POISSON
    burstiness: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate_per_s) and self.rate_per_s > 0):
            raise ArrivalError(f"arrival rate must be a positive number, got {self.rate_per_s}")
        object.__setattr__(self, "kind", arrival_process(self.kind))  # a caller's plain string
        if not (math.isfinite(self.burstiness) and self.burstiness > 0):
            raise ArrivalError(f"--burstiness must be a positive number, got {self.burstiness}")
        if self.burstiness != 1.0 and self.kind is not ArrivalProcess.GAMMA:
            raise ArrivalError("--burstiness shapes gamma arrivals: use it with --arrival gamma")

    def share(self, index: int, parts: int) -> Arrivals:
        """The share of one of ``parts`` processes (workers, shards): rate / parts, its own
        seed. Superposed Poisson shares are the whole Poisson process again."""
        if parts == 1:
            return self
        seed = random.Random(f"{self.seed}:{index}/{parts}").getrandbits(63)
        return replace(self, rate_per_s=self.rate_per_s / parts, seed=seed)


def gaps_s(arrivals: Arrivals) -> Iterator[float]:
    """Inter-arrival times in seconds, endless; the same seed gives the same gaps."""
    mean = 1.0 / arrivals.rate_per_s
    if arrivals.kind is ArrivalProcess.CONSTANT:
        while True:
            yield mean
    rng = random.Random(arrivals.seed)
    shape = arrivals.burstiness if arrivals.kind is ArrivalProcess.GAMMA else 1.0
    if shape == 1.0:
        while True:
            yield rng.expovariate(arrivals.rate_per_s)
    scale = mean / shape
    while True:
        yield rng.gammavariate(shape, scale)


def times_s(arrivals: Arrivals) -> Iterator[float]:
    """Arrival instants in seconds from 0 (the first one is one gap after 0)."""
    t = 0.0
    for gap in gaps_s(arrivals):
        t += gap
        yield t


@dataclass(frozen=True, slots=True)
class ArrivalLog:
    """What arrived and when it started, in seconds on the schedule's clock."""

    offered_rate_per_s: float
    cap: int  # lanes: concurrent trees allowed
    window_start_s: float  # the measured window's start (arrivals are offset from here)
    window_end_s: float  # the --duration deadline, else the last start
    due_s: tuple[float, ...]  # when each started arrival was due
    start_s: tuple[float, ...]  # when it started (later than due: it waited for a lane)
    waited: int  # arrivals that found every lane busy
    missed: int  # arrivals due before the stop that never started


class OpenLoop:
    """The schedule's open-loop state: the arrival process, arrivals waiting for a lane, what
    happened (:meth:`log`). :class:`agentx.schedule.Schedule` drives it."""

    def __init__(self, arrivals: Arrivals, cap: int) -> None:
        self.arrivals = arrivals
        self.cap = cap
        self.waiting: deque[float] = deque()  # due times of arrivals that found no free lane
        self.accepted = 0  # arrivals started or waiting
        self._gaps = gaps_s(arrivals)
        self._due: list[float] = []
        self._start: list[float] = []
        self._waited = 0
        self._missed = 0
        self._window: tuple[float | None, float | None] = (None, None)

    def accept(self, trees: int, *, recycle: bool) -> bool:
        """Whether an arrival is due now (a tree still to start: ``trees`` of them, or any
        number with ``recycle``); counts it when it is."""
        if trees == 0 or (not recycle and self.accepted >= trees):
            return False  # the trace is over: no more arrivals
        self.accepted += 1
        return True

    def begin(self, now_s: float) -> float:
        """The window starts at ``now_s``; returns when the first arrival is due."""
        self._window = (now_s, None)
        return now_s + next(self._gaps)

    def next_due(self, due_s: float) -> float:
        return due_s + next(self._gaps)

    def wait(self, due_s: float) -> None:
        self.waiting.append(due_s)
        self._waited += 1

    def started(self, due_s: float, now_s: float) -> None:
        self._due.append(due_s)
        self._start.append(now_s)

    def end(self, now_s: float, deadline_s: float | None, unsupplied: int = 0) -> None:
        """No more arrivals (stopped at ``now_s``; ``deadline_s`` when by ``--duration``): the
        ones waiting never start, nor the ``unsupplied`` ones whose tree was still being read."""
        self._missed += len(self.waiting) + unsupplied
        self.waiting.clear()
        if self._window[1] is None:
            last = self._start[-1] if self._start else now_s
            self._window = (self._window[0], deadline_s if deadline_s is not None else last)

    def log(self) -> ArrivalLog:
        begin = self._window[0] or 0.0
        end = self._window[1]
        if end is None:  # the trace ran out: the window ends at the last start
            end = self._start[-1] if self._start else begin
        return ArrivalLog(
            offered_rate_per_s=self.arrivals.rate_per_s,
            cap=self.cap,
            window_start_s=begin,
            window_end_s=end,
            due_s=tuple(self._due),
            start_s=tuple(self._start),
            waited=self._waited,
            missed=self._missed,
        )
