"""``summary.json`` (``agentx.summary/1``, the contract in docs/cli.md): one run's figures as a tree
of frozen values, built by :func:`agentx.metrics.summary.build_summary` and read by the reports.

``to_json`` writes the contract's keys first, in its order, then agentx's extra keys; a block a
run does not have (``clock``, ``gates``, ``merged_from``, ...) is left out rather than written as
``null``. ``from_json`` reads what an earlier agentx wrote too: a key it lacks is unknown
(``None``, or empty), as the reports have always treated it. Definitions: ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentx.core.percentiles import EMPTY, P
from agentx.results.base import (
    Json,
    counts,
    flag,
    free,
    integer,
    items,
    num,
    obj,
    opt_obj,
    opt_p,
    p_of,
    schema_obj,
    sub,
    text,
    texts,
)
from agentx.results.routing import Routing
from agentx.results.summary.cost import Cost
from agentx.results.summary.errors import Errors
from agentx.results.summary.identity import ClientHost, Labels, ServerIdentity, labels_of
from agentx.results.summary.rollups import Rollups
from agentx.results.summary.run import (
    Arrivals,
    Bottleneck,
    Clock,
    GateReport,
    LaneSchedule,
    MergedShard,
)
from agentx.results.summary.server import ServerBlock, Tiers
from agentx.results.summary.slo import Slo

SCHEMA = "agentx.summary/1"


@dataclass(frozen=True, slots=True)
class RequestCounts:
    """Measured requests (not warm-up, sent inside the window) and the others, counted apart."""

    total: int | None = None
    ok: int | None = None
    errors: int | None = None
    warmup: int | None = None
    drained: int | None = None
    without_usage: int | None = None  # succeeded without a usage block
    bad_usage: int | None = None  # succeeded with impossible token counts

    def to_json(self) -> Json:
        return {
            "total": self.total,
            "ok": self.ok,
            "errors": self.errors,
            "warmup": self.warmup,
            "drained": self.drained,
            "without_usage": self.without_usage,
            "bad_usage": self.bad_usage,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RequestCounts:
        keys = ("total", "ok", "errors", "warmup", "drained", "without_usage", "bad_usage")
        return cls(*(integer(d, k) for k in keys))


@dataclass(frozen=True, slots=True)
class SessionCounts:
    started: int | None = None
    completed: int | None = None

    def to_json(self) -> Json:
        return {"started": self.started, "completed": self.completed}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SessionCounts:
        return cls(integer(d, "started"), integer(d, "completed"))


@dataclass(frozen=True, slots=True)
class TokenTotals:
    """The server's token counts of the successful measured requests; ``cached`` is ``None``
    when no response reported cached tokens."""

    input: int | None = None
    output: int | None = None
    cached: int | None = None

    def to_json(self) -> Json:
        return {"input": self.input, "output": self.output, "cached": self.cached}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenTotals:
        return cls(integer(d, "input"), integer(d, "output"), integer(d, "cached"))


@dataclass(frozen=True, slots=True)
class Throughput:
    """Over the measured requests' own span, first send to last finish."""

    requests_per_s: float | None = None
    input_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None

    def to_json(self) -> Json:
        return {
            "requests_per_s": self.requests_per_s,
            "input_tokens_per_s": self.input_tokens_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Throughput:
        return cls(
            num(d, "requests_per_s"), num(d, "input_tokens_per_s"), num(d, "output_tokens_per_s")
        )


LATENCY_METRICS = ("ttft", "ttfc", "itl", "tpot", "e2e")


@dataclass(frozen=True, slots=True)
class Latency:
    """``latency_ms``: each metric's distribution over the successful measured requests (ITL:
    every gap of every request, pooled)."""

    ttft: P = EMPTY
    ttfc: P = EMPTY
    itl: P = EMPTY
    tpot: P = EMPTY
    e2e: P = EMPTY

    def of(self, metric: str) -> P:
        """A metric of :data:`LATENCY_METRICS` by name."""
        return {
            "ttft": self.ttft,
            "ttfc": self.ttfc,
            "itl": self.itl,
            "tpot": self.tpot,
            "e2e": self.e2e,
        }[metric]

    def to_json(self) -> Json:
        return {m: self.of(m).to_json() for m in LATENCY_METRICS}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Latency:
        return cls(*(p_of(d, m) for m in LATENCY_METRICS))


@dataclass(frozen=True, slots=True)
class Cache:
    """The three hit rates (``docs/metrics.md``), the server's prompt tokens by source and KV
    usage, and the block size the theoretical figure used."""

    reported_hit_rate: float | None = None
    theoretical_hit_rate: float | None = None
    server_metrics_hit_rate: float | None = None
    tiers: Tiers | None = None
    kv_cache_usage_perc: P | None = None
    block_size: int | None = None
    # the theoretical figure over the measured requests that succeeded (the one above counts
    # every request sent: failed ones warmed nothing, so it reads higher when many failed)
    theoretical_hit_rate_ok: float | None = None

    def to_json(self) -> Json:
        kv = self.kv_cache_usage_perc
        return {
            "reported_hit_rate": self.reported_hit_rate,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "server_metrics_hit_rate": self.server_metrics_hit_rate,
            "tiers": None if self.tiers is None else self.tiers.to_json(),
            "kv_cache_usage_perc": None if kv is None else kv.to_json(),
            "block_size": self.block_size,
            **(
                {"theoretical_hit_rate_ok": self.theoretical_hit_rate_ok}
                if self.theoretical_hit_rate_ok is not None
                else {}
            ),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Cache:
        tiers = opt_obj(d, "tiers")
        return cls(
            num(d, "reported_hit_rate"),
            num(d, "theoretical_hit_rate"),
            num(d, "server_metrics_hit_rate"),
            None if tiers is None else Tiers.from_json(tiers),
            opt_p(d, "kv_cache_usage_perc"),
            integer(d, "block_size"),
            num(d, "theoretical_hit_rate_ok"),
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    """``dispatch_lag_ms``: how late requests were sent against the schedule; a live run adds
    its lanes' starts, an open-loop run its arrivals (their keys sit beside it)."""

    dispatch_lag_ms: P = EMPTY
    lanes: LaneSchedule | None = None
    arrivals: Arrivals | None = None

    def to_json(self) -> Json:
        out: Json = {"dispatch_lag_ms": self.dispatch_lag_ms.to_json()}
        if self.lanes is not None:
            out.update(self.lanes.to_json())
        if self.arrivals is not None:
            out.update(self.arrivals.to_json())
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Schedule:
        return cls(
            p_of(d, "dispatch_lag_ms"),
            LaneSchedule.from_json(d) if "lanes" in d else None,
            Arrivals.from_json(d) if "arrival_unit" in d else None,
        )


@dataclass(frozen=True, slots=True)
class Client:
    cpu_percent: float | None = None
    saturated: bool | None = None

    def to_json(self) -> Json:
        return {"cpu_percent": self.cpu_percent, "saturated": self.saturated}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Client:
        return cls(num(d, "cpu_percent"), flag(d, "saturated"))


@dataclass(frozen=True, slots=True)
class WindowLatency:
    ttft: P = EMPTY
    e2e: P = EMPTY

    def to_json(self) -> Json:
        return {"ttft": self.ttft.to_json(), "e2e": self.e2e.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WindowLatency:
        return cls(p_of(d, "ttft"), p_of(d, "e2e"))


@dataclass(frozen=True, slots=True)
class Window:
    """The requests of one window (measured, or drained after ``--duration``) and their own
    span, rates and latency."""

    requests: int | None = None
    ok: int | None = None
    errors: int | None = None
    span_s: float | None = None
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    latency_ms: WindowLatency = WindowLatency()

    def to_json(self) -> Json:
        return {
            "requests": self.requests,
            "ok": self.ok,
            "errors": self.errors,
            "span_s": self.span_s,
            "requests_per_s": self.requests_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "latency_ms": self.latency_ms.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Window:
        return cls(
            integer(d, "requests"),
            integer(d, "ok"),
            integer(d, "errors"),
            num(d, "span_s"),
            num(d, "requests_per_s"),
            num(d, "output_tokens_per_s"),
            WindowLatency.from_json(sub(d, "latency_ms")),
        )


@dataclass(frozen=True, slots=True)
class Windows:
    """``window_s``: the ``--duration`` window (``None`` without one)."""

    window_s: float | None = None
    in_window: Window = Window()
    drained: Window = Window()

    def to_json(self) -> Json:
        return {
            "window_s": self.window_s,
            "in_window": self.in_window.to_json(),
            "drained": self.drained.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Windows:
        return cls(
            num(d, "window_s"),
            Window.from_json(sub(d, "in_window")),
            Window.from_json(sub(d, "drained")),
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """One run (or a merge of shards). The blocks after ``slo`` are agentx's own: ``windows``,
    ``errors_by_type``, ``errors`` (by kind, with the first message and a hint), ``rollups``,
    ``server``, ``cost``, ``clock``, ``config`` (the run's
    options, never the API key), ``agentx_version`` (who measured it); a merge adds
    ``merged_from``; the replay engine adds ``gates``, ``tokenizer`` (whose tokens the
    theoretical figures count) and ``bottleneck``; ``warnings`` when there are any; a replay adds what makes runs comparable:
    ``server_identity``, ``client_host``, ``trace_fingerprint``, ``labels``."""

    endpoint: str | None = None
    model: str | None = None
    started_at: str | None = None  # ISO-8601 wall clock
    duration_s: float | None = None  # whole run: first send to last response (drain included)
    requests: RequestCounts = RequestCounts()
    sessions: SessionCounts = SessionCounts()
    tokens: TokenTotals = TokenTotals()
    throughput: Throughput = Throughput()
    latency_ms: Latency = Latency()
    per_user_output_tokens_per_s: P = EMPTY
    cache: Cache = Cache()
    schedule: Schedule = Schedule()
    client: Client = Client()
    slo: Slo = field(default_factory=Slo)
    windows: Windows = Windows()
    errors_by_type: Mapping[str, int] = field(default_factory=dict)
    errors: Errors | None = None  # failed measured requests by kind (an earlier agentx: None)
    rollups: Rollups = field(default_factory=Rollups)
    server: ServerBlock | None = None
    cost: Cost | None = None
    clock: Clock | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    agentx_version: str | None = None
    merged_from: tuple[MergedShard, ...] | None = None
    gates: GateReport | None = None
    tokenizer: str | None = None
    bottleneck: Bottleneck | None = None
    warnings: tuple[str, ...] = ()
    # what makes runs comparable (agentx.results.summary.identity): a replay records them
    server_identity: ServerIdentity | None = None
    client_host: ClientHost | None = None
    trace_fingerprint: str | None = None  # sha256 of the trace's rows
    labels: Labels = ()  # --label NAME=VALUE, sorted by name
    routing: Routing | None = None  # a run over several replicas (agentx.results.routing)

    def to_json(self) -> Json:
        out: Json = {
            "schema": SCHEMA,
            "endpoint": self.endpoint,
            "model": self.model,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "requests": self.requests.to_json(),
            "sessions": self.sessions.to_json(),
            "tokens": self.tokens.to_json(),
            "throughput": self.throughput.to_json(),
            "latency_ms": self.latency_ms.to_json(),
            "per_user_output_tokens_per_s": self.per_user_output_tokens_per_s.to_json(),
            "cache": self.cache.to_json(),
            "schedule": self.schedule.to_json(),
            "client": self.client.to_json(),
            "slo": self.slo.to_json(),
            "windows": self.windows.to_json(),
            "errors_by_type": dict(self.errors_by_type),
            **({"errors": self.errors.to_json()} if self.errors is not None else {}),
            "rollups": self.rollups.to_json(),
            "server": None if self.server is None else self.server.to_json(),
            "cost": None if self.cost is None else self.cost.to_json(),
        }
        if self.routing is not None:  # a run of one server writes the file it always did
            out["routing"] = self.routing.to_json()
        if self.clock is not None:
            out["clock"] = self.clock.to_json()
        out["config"] = dict(self.config)
        if self.agentx_version is not None:
            out["agentx_version"] = self.agentx_version
        if self.merged_from is not None:
            out["merged_from"] = [m.to_json() for m in self.merged_from]
        if self.gates is not None:
            out["gates"] = self.gates.to_json()
        if self.tokenizer is not None:
            out["tokenizer"] = self.tokenizer
        if self.bottleneck is not None:
            out["bottleneck"] = self.bottleneck.to_json()
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.server_identity is not None:
            out["server_identity"] = self.server_identity.to_json()
        if self.client_host is not None:
            out["client_host"] = self.client_host.to_json()
        if self.trace_fingerprint is not None:
            out["trace_fingerprint"] = self.trace_fingerprint
        if self.labels:
            out["labels"] = dict(self.labels)
        return out

    @classmethod
    def from_json(cls, v: object) -> Summary:
        """An ``agentx.summary/1`` object; :class:`agentx.core.errors.ShapeError` when it is
        not one or a field has the wrong type."""
        d = schema_obj(v, SCHEMA)
        server, cost, clock, gates, verdict, errors, identity, host, routing = (
            opt_obj(d, k)
            for k in (
                "server",
                "cost",
                "clock",
                "gates",
                "bottleneck",
                "errors",
                "server_identity",
                "client_host",
                "routing",
            )
        )
        merged = d.get("merged_from")
        return cls(
            endpoint=text(d, "endpoint"),
            model=text(d, "model"),
            started_at=text(d, "started_at"),
            duration_s=num(d, "duration_s"),
            requests=RequestCounts.from_json(sub(d, "requests")),
            sessions=SessionCounts.from_json(sub(d, "sessions")),
            tokens=TokenTotals.from_json(sub(d, "tokens")),
            throughput=Throughput.from_json(sub(d, "throughput")),
            latency_ms=Latency.from_json(sub(d, "latency_ms")),
            per_user_output_tokens_per_s=p_of(d, "per_user_output_tokens_per_s"),
            cache=Cache.from_json(sub(d, "cache")),
            schedule=Schedule.from_json(sub(d, "schedule")),
            client=Client.from_json(sub(d, "client")),
            slo=Slo.from_json(sub(d, "slo")),
            windows=Windows.from_json(sub(d, "windows")),
            errors_by_type=counts(d, "errors_by_type"),
            errors=None if errors is None else Errors.from_json(errors),
            rollups=Rollups.from_json(sub(d, "rollups")),
            server=None if server is None else ServerBlock.from_json(server),
            cost=None if cost is None else Cost.from_json(cost),
            clock=None if clock is None else Clock.from_json(clock),
            config=free(d, "config"),
            agentx_version=text(d, "agentx_version"),
            merged_from=(
                None
                if merged is None
                else tuple(
                    MergedShard.from_json(obj(m, "merged_from")) for m in items(d, "merged_from")
                )
            ),
            gates=None if gates is None else GateReport.from_json(gates),
            tokenizer=text(d, "tokenizer"),
            bottleneck=None if verdict is None else Bottleneck.from_json(verdict),
            warnings=texts(d, "warnings"),
            server_identity=None if identity is None else ServerIdentity.from_json(identity),
            client_host=None if host is None else ClientHost.from_json(host),
            trace_fingerprint=text(d, "trace_fingerprint"),
            labels=labels_of(d, "labels"),
            routing=None if routing is None else Routing.from_json(routing),
        )
