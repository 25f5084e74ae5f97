"""What ``summary.json`` says about how a run went, beyond its figures: the replay engine's
``gates`` and ``bottleneck``, the lanes' starts and the open-loop arrivals under ``schedule``,
the ``clock`` anchor, and a merge's ``merged_from``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.core.percentiles import P
from agentx.results.base import (
    Json,
    bad,
    integer,
    items,
    need,
    num,
    numbers,
    obj,
    p_of,
    text,
    texts,
)


@dataclass(frozen=True, slots=True)
class GateReport:
    """The failure and coverage gates (:mod:`agentx.replay.gates`): a run with ``reasons``
    failed. ``coverage`` is ``None`` when the window was too short to be gated."""

    failed_ratio: float | None
    coverage: float | None  # the smaller of the two coverage fractions
    reasons: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.reasons

    def to_json(self) -> Json:
        return {
            "passed": self.passed,
            "failed_ratio": self.failed_ratio,
            "coverage": self.coverage,
            "reasons": list(self.reasons),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GateReport:
        return cls(num(d, "failed_ratio"), num(d, "coverage"), texts(d, "reasons"))


SATURATED_CPU_PERCENT = 90.0  # of one core: a client process this busy is saturated


@dataclass(frozen=True, slots=True)
class Bottleneck:
    """Who set the pace, client or server, and the figures that decided it
    (:mod:`agentx.replay.bottleneck`)."""

    bottleneck: str  # "client" | "server" | "none"
    cause: str | None  # client: "cpu" | "starved" | "blocked"; server: "queue" | "ttft"
    client_cpu_percent_max: float  # busiest client process, % of one core
    dispatch_lag_p99_ms: float | None
    loop_late_p99_ms: float | None
    loop_ran_when_late: float | None  # mean shares over the late ticks (None: none was late)
    loop_waited_when_late: float | None
    server_waiting_max: float | None  # most requests waiting at the server in a scrape
    server_waiting_share: float | None  # share of scrapes with requests waiting
    ttft_p50_first_ms: float | None  # first quarter of the requests, by send time
    ttft_p50_last_ms: float | None

    def to_json(self) -> Json:
        return {
            "bottleneck": self.bottleneck,
            "cause": self.cause,
            "client_cpu_percent_max": self.client_cpu_percent_max,
            "dispatch_lag_p99_ms": self.dispatch_lag_p99_ms,
            "loop_late_p99_ms": self.loop_late_p99_ms,
            "loop_ran_when_late": self.loop_ran_when_late,
            "loop_waited_when_late": self.loop_waited_when_late,
            "server_waiting_max": self.server_waiting_max,
            "server_waiting_share": self.server_waiting_share,
            "ttft_p50_first_ms": self.ttft_p50_first_ms,
            "ttft_p50_last_ms": self.ttft_p50_last_ms,
        }

    @property
    def cpu_saturated(self) -> bool:
        """The client held the run back and its busiest process used nearly a whole core: the
        one case a report calls the client CPU-saturated (a client late for another reason,
        or busy only in bursts, is the bottleneck without being saturated)."""
        return self.bottleneck == "client" and self.client_cpu_percent_max >= SATURATED_CPU_PERCENT

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Bottleneck:
        return cls(
            need(text(d, "bottleneck"), "bottleneck"),
            text(d, "cause"),
            need(num(d, "client_cpu_percent_max"), "client_cpu_percent_max"),
            num(d, "dispatch_lag_p99_ms"),
            num(d, "loop_late_p99_ms"),
            num(d, "loop_ran_when_late"),
            num(d, "loop_waited_when_late"),
            num(d, "server_waiting_max"),
            num(d, "server_waiting_share"),
            num(d, "ttft_p50_first_ms"),
            num(d, "ttft_p50_last_ms"),
        )


@dataclass(frozen=True, slots=True)
class LaneStartRow:
    """Where a lane's first session started: ``t_star_s`` after its first request, at
    ``position`` of its recorded span, after ``primers`` warm-up requests."""

    lane: int
    session: str
    t_star_s: float
    position: float
    primers: int

    def to_json(self) -> Json:
        return {
            "lane": self.lane,
            "session": self.session,
            "t_star_s": self.t_star_s,
            "position": self.position,
            "primers": self.primers,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LaneStartRow:
        return cls(
            need(integer(d, "lane"), "lane"),
            need(text(d, "session"), "session"),
            need(num(d, "t_star_s"), "t_star_s"),
            need(num(d, "position"), "position"),
            need(integer(d, "primers"), "primers"),
        )


@dataclass(frozen=True, slots=True)
class LaneSchedule:
    """How a live run's lanes started (keys of ``schedule`` beside ``dispatch_lag_ms``):
    ``warmup_s`` is the warm-up's length (``None`` without one), ``idle_caps`` the seconds each
    idle cap cut."""

    lanes: tuple[LaneStartRow, ...]
    warmup_s: float | None
    idle_caps: Mapping[str, float]

    def to_json(self) -> Json:
        return {
            "lanes": [ln.to_json() for ln in self.lanes],
            "warmup_s": self.warmup_s,
            "idle_caps": dict(self.idle_caps),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LaneSchedule:
        return cls(
            tuple(LaneStartRow.from_json(obj(ln, "lanes")) for ln in items(d, "lanes")),
            num(d, "warmup_s"),
            numbers(d, "idle_caps"),
        )


ARRIVAL_UNITS = ("session", "request")


@dataclass(frozen=True, slots=True)
class Arrivals:
    """Open loop (keys of ``schedule``): the offered and achieved rate of what arrived
    (``arrival_unit``: ``session`` with ``--session-rate``, ``request`` with
    ``--request-rate``; the rates' keys name it) and how late arrivals started."""

    arrival_unit: str
    offered_rate: float
    achieved_rate: float | None
    arrivals_started: int
    arrivals_missed: int
    arrival_window_s: float
    concurrency_cap: int
    arrivals_waited_for_slot: int
    arrival_start_delay_ms: P
    mode: str = "open_loop"

    def to_json(self) -> Json:
        unit = self.arrival_unit
        return {
            "mode": self.mode,
            "arrival_unit": unit,
            f"offered_{unit}_rate": self.offered_rate,
            f"achieved_{unit}_rate": self.achieved_rate,
            "arrivals_started": self.arrivals_started,
            "arrivals_missed": self.arrivals_missed,
            "arrival_window_s": self.arrival_window_s,
            "concurrency_cap": self.concurrency_cap,
            "arrivals_waited_for_slot": self.arrivals_waited_for_slot,
            "arrival_start_delay_ms": self.arrival_start_delay_ms.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Arrivals:
        unit = need(text(d, "arrival_unit"), "arrival_unit")
        if unit not in ARRIVAL_UNITS:
            raise bad("arrival_unit", " or ".join(ARRIVAL_UNITS), unit)

        def count(key: str) -> int:
            return need(integer(d, key), key)

        return cls(
            arrival_unit=unit,
            offered_rate=need(num(d, f"offered_{unit}_rate"), f"offered_{unit}_rate"),
            achieved_rate=num(d, f"achieved_{unit}_rate"),
            arrivals_started=count("arrivals_started"),
            arrivals_missed=count("arrivals_missed"),
            arrival_window_s=need(num(d, "arrival_window_s"), "arrival_window_s"),
            concurrency_cap=count("concurrency_cap"),
            arrivals_waited_for_slot=count("arrivals_waited_for_slot"),
            arrival_start_delay_ms=p_of(d, "arrival_start_delay_ms"),
            mode=need(text(d, "mode"), "mode"),
        )


@dataclass(frozen=True, slots=True)
class Clock:
    """The run's start on the rows' clock (perf counter) and on the wall clock: maps a row's
    ``sent_ns`` to wall time, so shards measured on different machines merge onto one clock."""

    perf_ns: int
    wall_ns: int

    @property
    def offset_ns(self) -> int:
        """rows' clock + offset = wall clock"""
        return self.wall_ns - self.perf_ns

    def to_json(self) -> Json:
        return {"perf_ns": self.perf_ns, "wall_ns": self.wall_ns}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Clock:
        return cls(need(integer(d, "perf_ns"), "perf_ns"), need(integer(d, "wall_ns"), "wall_ns"))


@dataclass(frozen=True, slots=True)
class MergedShard:
    """One shard a merged summary holds: its directory, ``I/N`` label and where it ran."""

    dir: str | None
    shard: str
    started_at: str | None
    endpoint: str | None
    requests: int | None
    agentx_version: str | None

    def to_json(self) -> Json:
        return {
            "dir": self.dir,
            "shard": self.shard,
            "started_at": self.started_at,
            "endpoint": self.endpoint,
            "requests": self.requests,
            "agentx_version": self.agentx_version,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MergedShard:
        return cls(
            text(d, "dir"),
            need(text(d, "shard"), "shard"),
            text(d, "started_at"),
            text(d, "endpoint"),
            integer(d, "requests"),
            text(d, "agentx_version"),
        )
