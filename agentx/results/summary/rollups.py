"""``summary.json`` ``rollups``: one row per session copy, per turn depth and per second, and the
latency quantile curves the reports draw CDFs from. Definitions: ``docs/metrics.md``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.core.percentiles import P
from agentx.results.base import Json, floats, integer, items, need, num, obj, p_of, text


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One replayed session copy: a session on a lane (recycled copies are apart)."""

    session_id: str
    lane: int
    requests: int
    errors: int
    threads: int
    max_turn: int
    duration_s: float | None
    input_tokens: int
    output_tokens: int
    cached_tokens: int | None
    reported_hit_rate: float | None
    theoretical_hit_rate: float | None
    ttft_ms_p50: float | None
    ttft_ms_max: float | None

    def to_json(self) -> Json:
        return {
            "session_id": self.session_id,
            "lane": self.lane,
            "requests": self.requests,
            "errors": self.errors,
            "threads": self.threads,
            "max_turn": self.max_turn,
            "duration_s": self.duration_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reported_hit_rate": self.reported_hit_rate,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "ttft_ms_p50": self.ttft_ms_p50,
            "ttft_ms_max": self.ttft_ms_max,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SessionRow:
        return cls(
            session_id=need(text(d, "session_id"), "session_id"),
            lane=need(integer(d, "lane"), "lane"),
            requests=need(integer(d, "requests"), "requests"),
            errors=need(integer(d, "errors"), "errors"),
            threads=need(integer(d, "threads"), "threads"),
            max_turn=need(integer(d, "max_turn"), "max_turn"),
            duration_s=num(d, "duration_s"),
            input_tokens=need(integer(d, "input_tokens"), "input_tokens"),
            output_tokens=need(integer(d, "output_tokens"), "output_tokens"),
            cached_tokens=integer(d, "cached_tokens"),
            reported_hit_rate=num(d, "reported_hit_rate"),
            theoretical_hit_rate=num(d, "theoretical_hit_rate"),
            ttft_ms_p50=num(d, "ttft_ms_p50"),
            ttft_ms_max=num(d, "ttft_ms_max"),
        )


@dataclass(frozen=True, slots=True)
class TurnRow:
    """One turn index (a request's position in its thread) over every session."""

    turn: int
    requests: int
    errors: int
    input_tokens_mean: float | None
    ttft_ms: P
    reported_hit_rate: float | None
    theoretical_hit_rate: float | None

    def to_json(self) -> Json:
        return {
            "turn": self.turn,
            "requests": self.requests,
            "errors": self.errors,
            "input_tokens_mean": self.input_tokens_mean,
            "ttft_ms": self.ttft_ms.to_json(),
            "reported_hit_rate": self.reported_hit_rate,
            "theoretical_hit_rate": self.theoretical_hit_rate,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TurnRow:
        return cls(
            turn=need(integer(d, "turn"), "turn"),
            requests=need(integer(d, "requests"), "requests"),
            errors=need(integer(d, "errors"), "errors"),
            input_tokens_mean=num(d, "input_tokens_mean"),
            ttft_ms=p_of(d, "ttft_ms"),
            reported_hit_rate=num(d, "reported_hit_rate"),
            theoretical_hit_rate=num(d, "theoretical_hit_rate"),
        )


@dataclass(frozen=True, slots=True)
class SecondRow:
    """One second of the run (``t_s`` after the first measured send): requests started,
    completed and failed, output tokens spread over each decode, the reported hit rate of the
    requests that completed in it, and the server's interval hit rate and KV usage."""

    t_s: int
    started: int
    completed: int
    errors: int
    output_tokens: float
    cached_tokens: int | None
    prompt_tokens: int | None
    reported_hit_rate: float | None
    ttft_ms_p50: float | None
    server_hit_rate: float | None
    kv_cache_usage_perc: float | None

    def to_json(self) -> Json:
        return {
            "t_s": self.t_s,
            "started": self.started,
            "completed": self.completed,
            "errors": self.errors,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "prompt_tokens": self.prompt_tokens,
            "reported_hit_rate": self.reported_hit_rate,
            "ttft_ms_p50": self.ttft_ms_p50,
            "server_hit_rate": self.server_hit_rate,
            "kv_cache_usage_perc": self.kv_cache_usage_perc,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SecondRow:
        return cls(
            t_s=need(integer(d, "t_s"), "t_s"),
            started=need(integer(d, "started"), "started"),
            completed=need(integer(d, "completed"), "completed"),
            errors=need(integer(d, "errors"), "errors"),
            output_tokens=need(num(d, "output_tokens"), "output_tokens"),
            cached_tokens=integer(d, "cached_tokens"),
            prompt_tokens=integer(d, "prompt_tokens"),
            reported_hit_rate=num(d, "reported_hit_rate"),
            ttft_ms_p50=num(d, "ttft_ms_p50"),
            server_hit_rate=num(d, "server_hit_rate"),
            kv_cache_usage_perc=num(d, "kv_cache_usage_perc"),
        )


@dataclass(frozen=True, slots=True)
class LatencyCurves:
    """TTFT, ITL and E2E (ms) at each of ``levels`` (percent): the CDFs of the reports.
    A curve is ``None`` when its metric has no sample."""

    levels: tuple[float, ...]
    ttft: tuple[float, ...] | None
    itl: tuple[float, ...] | None
    e2e: tuple[float, ...] | None

    def to_json(self) -> Json:
        def out(c: tuple[float, ...] | None) -> list[float] | None:
            return None if c is None else list(c)

        return {
            "levels": list(self.levels),
            "ttft": out(self.ttft),
            "itl": out(self.itl),
            "e2e": out(self.e2e),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LatencyCurves:
        return cls(floats(d, "levels") or (), floats(d, "ttft"), floats(d, "itl"), floats(d, "e2e"))

    def curve(self, metric: str) -> tuple[float, ...] | None:
        """One metric's curve by name (``ttft``, ``itl``, ``e2e``)."""
        return {"ttft": self.ttft, "itl": self.itl, "e2e": self.e2e}.get(metric)


@dataclass(frozen=True, slots=True)
class Rollups:
    """``latency_quantiles_ms`` is ``None`` in a summary written before agentx drew CDFs (the
    report computes it from ``requests.parquet``)."""

    per_session: tuple[SessionRow, ...] = ()
    per_turn_depth: tuple[TurnRow, ...] = ()
    time_series: tuple[SecondRow, ...] = ()
    latency_quantiles_ms: LatencyCurves | None = None

    def to_json(self) -> Json:
        out: Json = {
            "per_session": [r.to_json() for r in self.per_session],
            "per_turn_depth": [r.to_json() for r in self.per_turn_depth],
            "time_series": [r.to_json() for r in self.time_series],
        }
        if self.latency_quantiles_ms is not None:
            out["latency_quantiles_ms"] = self.latency_quantiles_ms.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Rollups:
        curves = d.get("latency_quantiles_ms")
        return cls(
            tuple(SessionRow.from_json(obj(r, "per_session")) for r in items(d, "per_session")),
            tuple(TurnRow.from_json(obj(r, "per_turn_depth")) for r in items(d, "per_turn_depth")),
            tuple(SecondRow.from_json(obj(r, "time_series")) for r in items(d, "time_series")),
            None if not curves else LatencyCurves.from_json(obj(curves, "latency_quantiles_ms")),
        )
