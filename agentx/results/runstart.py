"""``DIR/.agentx-run/run.json`` (``agentx.run-start/1``): a replay's set-up, written when its
lanes start, beside the rows it spools into its results directory. Everything the finish needs
beyond the rows to build ``summary.json``: the options (never the API key or any credential),
what the probe and the plan decided, the endpoint's identity, the trace's fingerprint, the
start on both clocks. ``agentx recover DIR`` builds a killed run's summary from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentx.results.base import (
    Json,
    floats,
    free,
    integer,
    items,
    need,
    num,
    opt_obj,
    schema_obj,
    text,
    texts,
)
from agentx.results.summary.identity import ServerIdentity, labels_of

SCHEMA = "agentx.run-start/1"


@dataclass(frozen=True, slots=True)
class RunStart:
    """A replay's set-up, as the finish reads it. ``config`` is ``summary.json``'s ``config``
    as known at the start (``interrupted`` is added at the end); ``cost`` the cost options as
    :func:`agentx.metrics.cost.cost_options_json` writes them; ``sent_logs`` where the bodies
    sent are spooled (the run's temporary directory: prompt text stays out of ``-o``)."""

    started_at: str  # ISO-8601 wall clock
    anchor_perf_ns: int  # one instant on the rows' clock (perf counter) ...
    anchor_wall_ns: int  # ... and on the wall clock
    endpoint: str  # redacted
    model: str
    server_kind: str
    server_identity: ServerIdentity
    kv_tokens: int | None
    block_size: int
    lanes: int
    concurrency: int
    workers: int
    api: str
    window_s: float | None  # --duration
    max_failed_ratio: float | None
    min_coverage: float | None
    slo: str | None
    tokenizer: str | None  # --tokenizer (None: agentx's own)
    trace: str
    trace_fingerprint: str | None
    percentiles: tuple[float, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    cost: Json | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # what the set-up found, for the summary
    plan_warnings: tuple[str, ...] = ()  # what the plan found (a live run's end: refreshed)
    sent_logs: tuple[str, ...] = ()

    def wall_ns(self, perf_ns: int) -> int:
        """An instant on the rows' clock, on the wall clock."""
        return self.anchor_wall_ns + (perf_ns - self.anchor_perf_ns)

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "started_at": self.started_at,
            "clock": {"perf_ns": self.anchor_perf_ns, "wall_ns": self.anchor_wall_ns},
            "endpoint": self.endpoint,
            "model": self.model,
            "server_kind": self.server_kind,
            "server_identity": self.server_identity.to_json(),
            "kv_tokens": self.kv_tokens,
            "block_size": self.block_size,
            "lanes": self.lanes,
            "concurrency": self.concurrency,
            "workers": self.workers,
            "api": self.api,
            "window_s": self.window_s,
            "max_failed_ratio": self.max_failed_ratio,
            "min_coverage": self.min_coverage,
            "slo": self.slo,
            "tokenizer": self.tokenizer,
            "trace": self.trace,
            "trace_fingerprint": self.trace_fingerprint,
            "percentiles": list(self.percentiles),
            "labels": dict(self.labels),
            "cost": self.cost,
            "config": dict(self.config),
            "warnings": list(self.warnings),
            "plan_warnings": list(self.plan_warnings),
            "sent_logs": list(self.sent_logs),
        }

    @classmethod
    def from_json(cls, v: object) -> RunStart:
        d = schema_obj(v, SCHEMA)
        clock = opt_obj(d, "clock") or {}
        cost = opt_obj(d, "cost")
        return cls(
            started_at=need(text(d, "started_at"), "started_at"),
            anchor_perf_ns=need(integer(clock, "perf_ns"), "clock.perf_ns"),
            anchor_wall_ns=need(integer(clock, "wall_ns"), "clock.wall_ns"),
            endpoint=need(text(d, "endpoint"), "endpoint"),
            model=need(text(d, "model"), "model"),
            server_kind=need(text(d, "server_kind"), "server_kind"),
            server_identity=ServerIdentity.from_json(opt_obj(d, "server_identity") or {}),
            kv_tokens=integer(d, "kv_tokens"),
            block_size=need(integer(d, "block_size"), "block_size"),
            lanes=need(integer(d, "lanes"), "lanes"),
            concurrency=need(integer(d, "concurrency"), "concurrency"),
            workers=need(integer(d, "workers"), "workers"),
            api=need(text(d, "api"), "api"),
            window_s=num(d, "window_s"),
            max_failed_ratio=num(d, "max_failed_ratio"),
            min_coverage=num(d, "min_coverage"),
            slo=text(d, "slo"),
            tokenizer=text(d, "tokenizer"),
            trace=need(text(d, "trace"), "trace"),
            trace_fingerprint=text(d, "trace_fingerprint"),
            percentiles=floats(d, "percentiles") or (),
            labels=labels_of(d, "labels"),
            cost=None if cost is None else dict(cost),
            config=free(d, "config"),
            warnings=texts(d, "warnings"),
            plan_warnings=texts(d, "plan_warnings"),
            sent_logs=tuple(str(p) for p in items(d, "sent_logs")),
        )
