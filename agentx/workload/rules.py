"""The part of replay's options that decides what is sent when (lanes, think time, warm-up,
snapshot starts, spawn/join, idle caps, stopping), in one place for ``agentx replay``'s lanes and
``agentx simulate``'s virtual-time driver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from agentx.schedule import ScheduleOptions, SpawnJoin
from agentx.schedule.arrivals import Arrivals


@dataclass(frozen=True, slots=True)
class ScheduleRules:
    """The subset of :class:`agentx.replay.options.ReplayOptions` that decides what is sent
    when: replay's lanes and ``simulate`` both turn it into :class:`ScheduleOptions`."""

    concurrency: int = 1
    time_scale: float = 1.0
    max_think_s: float | None = None
    warmup: int = 0  # requests per lane
    max_requests: int | None = None  # measured requests
    duration_s: float | None = None  # no sends after this long
    start_ratio: tuple[float, float] = (0.0, 0.0)
    burst: bool = False
    spawn_join: SpawnJoin = "recorded"
    trace_idle_cap_s: float | None = None
    system_idle_cap_s: float | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> ScheduleRules:
        """The rules among ``ReplayOptions`` fields (:func:`agentx.workload.scenario.scenario_values`:
        a preset and the flags given); the fields not given keep replay's defaults."""
        names = {f.name for f in fields(cls)} - {"warmup"}
        rules = {k: v for k, v in values.items() if k in names}
        return cls(warmup=values.get("warmup") or 0, **rules)

    @property
    def recycle(self) -> bool:
        return self.duration_s is not None or self.max_requests is not None

    def options(
        self,
        seed: int = 0,
        *,
        lanes: tuple[int, ...] | None = None,
        arrivals: Arrivals | None = None,
    ) -> ScheduleOptions:
        """The schedule's options; ``lanes`` default to ``0 .. concurrency-1`` (one process)."""
        return ScheduleOptions(
            lanes=tuple(range(self.concurrency)) if lanes is None else lanes,
            recycle=self.recycle,
            start_ratio=self.start_ratio,
            seed=seed,
            time_scale=self.time_scale,
            max_think_s=self.max_think_s,
            warmup_per_lane=self.warmup,
            burst=self.burst,
            duration_s=self.duration_s,
            max_requests=self.max_requests,
            trace_idle_cap_s=self.trace_idle_cap_s,
            system_idle_cap_s=self.system_idle_cap_s,
            spawn_join=self.spawn_join,
            arrivals=arrivals,
        )
