"""``DIR/sweep.json`` of ``agentx sweep`` (``agentx.sweep/1``): one point per level (a
concurrency, or a routing policy with ``--route LIST``, or a pair of both), each taken from that
level's ``summary.json`` (:func:`agentx.report.sweep_view.sweep_point`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, flag, integer, items, need, num, obj, schema_obj, text

SCHEMA = "agentx.sweep/1"
# the keys of a point the contract names (the rest are agentx's)
POINT_KEYS = (
    "concurrency",
    "requests_per_s",
    "output_tokens_per_s",
    "per_user_output_tokens_per_s_p50",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "itl_ms_p50",
    "hit_rate_reported",
    "hit_rate_theoretical",
    "errors",
)
# what a level routed over several replicas adds (a level of one server writes none of them)
ROUTED_POINT_KEYS = (
    "route",
    "ttft_ms_p90",
    "routing_loss_points",
    "hit_rate_replica_theoretical",
    "imbalance_requests_max_over_mean",
    "imbalance_prompt_tokens_max_over_mean",
)


@dataclass(frozen=True, slots=True)
class PointRouting:
    """What a level routed over several replicas adds to its point (its ``routing`` block's
    policy, routing loss, the replicas' own theoretical hit rate, the imbalance as max over
    mean of the requests and prompt tokens per replica) and its TTFT p90; written flat."""

    route: str
    ttft_ms_p90: float | None
    routing_loss_points: float | None
    hit_rate_replica_theoretical: float | None
    imbalance_requests_max_over_mean: float | None
    imbalance_prompt_tokens_max_over_mean: float | None

    def to_json(self) -> Json:
        return {
            "route": self.route,
            "ttft_ms_p90": self.ttft_ms_p90,
            "routing_loss_points": self.routing_loss_points,
            "hit_rate_replica_theoretical": self.hit_rate_replica_theoretical,
            "imbalance_requests_max_over_mean": self.imbalance_requests_max_over_mean,
            "imbalance_prompt_tokens_max_over_mean": self.imbalance_prompt_tokens_max_over_mean,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PointRouting:
        return cls(
            need(text(d, "route"), "route"),
            num(d, "ttft_ms_p90"),
            num(d, "routing_loss_points"),
            num(d, "hit_rate_replica_theoretical"),
            num(d, "imbalance_requests_max_over_mean"),
            num(d, "imbalance_prompt_tokens_max_over_mean"),
        )


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One level: the throughput-interactivity figures (the contract's point keys), then the
    level's requests, length, whether the client saturated, its results directory (relative
    to the sweep's) and, with cost options, its cost figures.

    A level routed over several replicas adds its :class:`PointRouting` (``routing``); a level
    of one server writes the point it always did."""

    concurrency: int
    requests_per_s: float | None
    output_tokens_per_s: float | None
    per_user_output_tokens_per_s_p50: float | None
    ttft_ms_p50: float | None
    ttft_ms_p99: float | None
    itl_ms_p50: float | None
    hit_rate_reported: float | None
    hit_rate_theoretical: float | None
    errors: int | None
    requests: int | None
    duration_s: float | None
    client_saturated: bool | None
    results_dir: str
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None
    gross_margin: float | None
    routing: PointRouting | None = None

    @property
    def route(self) -> str | None:
        """The level's routing policy, ``None`` for a level of one server."""
        return None if self.routing is None else self.routing.route

    @property
    def label(self) -> str:
        """How the sweep names the level: ``c4``, or ``session c4`` for a routed level."""
        return f"c{self.concurrency}" if self.route is None else f"{self.route} c{self.concurrency}"

    def to_json(self) -> Json:
        out: Json = {
            "concurrency": self.concurrency,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "per_user_output_tokens_per_s_p50": self.per_user_output_tokens_per_s_p50,
            "ttft_ms_p50": self.ttft_ms_p50,
            "ttft_ms_p99": self.ttft_ms_p99,
            "itl_ms_p50": self.itl_ms_p50,
            "hit_rate_reported": self.hit_rate_reported,
            "hit_rate_theoretical": self.hit_rate_theoretical,
            "errors": self.errors,
            "requests": self.requests,
            "duration_s": self.duration_s,
            "client_saturated": self.client_saturated,
            "results_dir": self.results_dir,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "usd_per_million_total_tokens": self.usd_per_million_total_tokens,
            "gross_margin": self.gross_margin,
        }
        if self.routing is not None:
            out.update(self.routing.to_json())
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SweepPoint:
        concurrency = need(integer(d, "concurrency"), "concurrency")
        return cls(
            concurrency=concurrency,
            requests_per_s=num(d, "requests_per_s"),
            output_tokens_per_s=num(d, "output_tokens_per_s"),
            per_user_output_tokens_per_s_p50=num(d, "per_user_output_tokens_per_s_p50"),
            ttft_ms_p50=num(d, "ttft_ms_p50"),
            ttft_ms_p99=num(d, "ttft_ms_p99"),
            itl_ms_p50=num(d, "itl_ms_p50"),
            hit_rate_reported=num(d, "hit_rate_reported"),
            hit_rate_theoretical=num(d, "hit_rate_theoretical"),
            errors=integer(d, "errors"),
            requests=integer(d, "requests"),
            duration_s=num(d, "duration_s"),
            client_saturated=flag(d, "client_saturated"),
            results_dir=text(d, "results_dir") or f"c{concurrency}",
            usd_per_million_output_tokens=num(d, "usd_per_million_output_tokens"),
            usd_per_million_total_tokens=num(d, "usd_per_million_total_tokens"),
            gross_margin=num(d, "gross_margin"),
            routing=PointRouting.from_json(d) if text(d, "route") is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Sweep:
    """The sweep's endpoint, trace and model (the levels' own, once one ran), and its points
    in the order the levels ran."""

    endpoint: str
    trace: str
    model: str | None
    points: tuple[SweepPoint, ...]

    @property
    def has_cost(self) -> bool:
        return any(p.usd_per_million_output_tokens is not None for p in self.points)

    @property
    def routes(self) -> tuple[str, ...]:
        """The routing policies of the levels, each once, in the order they ran."""
        return tuple(dict.fromkeys(p.route for p in self.points if p.route is not None))

    @property
    def levels(self) -> tuple[int, ...]:
        """The concurrency levels, each once, in the order they ran."""
        return tuple(dict.fromkeys(p.concurrency for p in self.points))

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "endpoint": self.endpoint,
            "trace": self.trace,
            "model": self.model,
            "points": [p.to_json() for p in self.points],
        }

    @classmethod
    def from_json(cls, v: object) -> Sweep:
        d = schema_obj(v, SCHEMA)
        return cls(
            need(text(d, "endpoint"), "endpoint"),
            need(text(d, "trace"), "trace"),
            text(d, "model"),
            tuple(SweepPoint.from_json(obj(p, "points")) for p in items(d, "points")),
        )
