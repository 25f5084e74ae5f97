"""``trend.json`` (``agentx.trend/1``): many runs of one benchmark over time, each headline figure
per run, the runs grouped into series by their labels (``agentx report RUN... --trend -o DIR``;
:mod:`agentx.report.trend` builds and draws it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, flag, integer, items, need, num, obj, schema_obj, text, texts
from agentx.results.summary.identity import Labels, labels_of

SCHEMA = "agentx.trend/1"


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run: where it is, when it ran, its labels and the series they put it in, its headline
    figures (hit rate three ways, TTFT/ITL p50/p99 in ms, output tokens/s in total, per GPU and
    per user p50, USD per million output tokens), and whether it is on the throughput–
    interactivity frontier (no other run is faster per user and delivers more per GPU)."""

    results_dir: str
    started_at: str | None
    labels: Labels
    series: str
    trace_fingerprint: str | None
    reported_hit_rate: float | None
    server_metrics_hit_rate: float | None
    theoretical_hit_rate: float | None
    ttft_ms_p50: float | None
    ttft_ms_p99: float | None
    itl_ms_p50: float | None
    itl_ms_p99: float | None
    output_tokens_per_s: float | None
    gpus: int | None  # from the run's cost options; unknown without them
    output_tokens_per_s_per_gpu: float | None
    per_user_output_tokens_per_s_p50: float | None
    usd_per_million_output_tokens: float | None
    on_frontier: bool

    def to_json(self) -> Json:
        return {
            "results_dir": self.results_dir,
            "started_at": self.started_at,
            "labels": dict(self.labels),
            "series": self.series,
            "trace_fingerprint": self.trace_fingerprint,
            "reported_hit_rate": self.reported_hit_rate,
            "server_metrics_hit_rate": self.server_metrics_hit_rate,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "ttft_ms_p50": self.ttft_ms_p50,
            "ttft_ms_p99": self.ttft_ms_p99,
            "itl_ms_p50": self.itl_ms_p50,
            "itl_ms_p99": self.itl_ms_p99,
            "output_tokens_per_s": self.output_tokens_per_s,
            "gpus": self.gpus,
            "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
            "per_user_output_tokens_per_s_p50": self.per_user_output_tokens_per_s_p50,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "on_frontier": self.on_frontier,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TrendPoint:
        return cls(
            need(text(d, "results_dir"), "results_dir"),
            text(d, "started_at"),
            labels_of(d, "labels"),
            need(text(d, "series"), "series"),
            text(d, "trace_fingerprint"),
            num(d, "reported_hit_rate"),
            num(d, "server_metrics_hit_rate"),
            num(d, "theoretical_hit_rate"),
            num(d, "ttft_ms_p50"),
            num(d, "ttft_ms_p99"),
            num(d, "itl_ms_p50"),
            num(d, "itl_ms_p99"),
            num(d, "output_tokens_per_s"),
            integer(d, "gpus"),
            num(d, "output_tokens_per_s_per_gpu"),
            num(d, "per_user_output_tokens_per_s_p50"),
            num(d, "usd_per_million_output_tokens"),
            bool(flag(d, "on_frontier")),
        )


@dataclass(frozen=True, slots=True)
class Trend:
    """The runs oldest first; ``group_by`` the label names the series are made of (the labels
    whose value differs between runs)."""

    points: tuple[TrendPoint, ...]
    group_by: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "group_by": list(self.group_by),
            "points": [p.to_json() for p in self.points],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, v: object) -> Trend:
        d = schema_obj(v, SCHEMA)
        return cls(
            tuple(TrendPoint.from_json(obj(p, "points")) for p in items(d, "points")),
            texts(d, "group_by"),
            texts(d, "warnings"),
        )
