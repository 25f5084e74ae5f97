"""``agentx simulate --json`` (``agentx.simulate/1``, the contract in docs/cli.md): the hit rate a
KV cache of each capacity would reach, GPU-only and with an offload tier.

Two timelines answer it (docs/simulate.md) and each says what it modelled: the recorded one
(the trace's own times, the stack-distance engine: :class:`RecordedSimulation`) and replay's
(the engine model on replay's schedule, or at a results directory's send times:
:class:`ReplaySimulation`, whose points also say what each engine run evicted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import (
    Json,
    flag,
    free,
    integer,
    items,
    need,
    num,
    obj,
    opt_obj,
    schema_obj,
    sub,
    text,
)
from agentx.results.routing import ReplicaFigures, Routing, replica_list

SCHEMA = "agentx.simulate/1"


@dataclass(frozen=True, slots=True)
class RunFigures:
    """What one engine run of replay's timeline did: its blocks, evictions, queue and length.
    ``as_unbounded``: not run, derived from the unbounded run (a run of it would refill
    nothing and keep nobody waiting)."""

    kv_blocks: int  # of each replica, when routed over several
    evicted_blocks: int
    peak_waiting: int
    duration_s: float
    as_unbounded: bool = False
    # routed over several replicas (--replicas): the run's TTFT and each replica's figures
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    replicas: tuple[ReplicaFigures, ...] = ()

    def to_json(self) -> Json:
        out: Json = {
            "kv_blocks": self.kv_blocks,
            "evicted_blocks": self.evicted_blocks,
            "peak_waiting": self.peak_waiting,
            "duration_s": self.duration_s,
        }
        if self.as_unbounded:
            out["as_unbounded"] = True
        if self.ttft_p50_s is not None:
            out["ttft_p50_s"] = self.ttft_p50_s
        if self.ttft_p90_s is not None:
            out["ttft_p90_s"] = self.ttft_p90_s
        if self.replicas:
            out["replicas"] = [r.to_json() for r in self.replicas]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunFigures:
        return cls(
            need(integer(d, "kv_blocks"), "kv_blocks"),
            need(integer(d, "evicted_blocks"), "evicted_blocks"),
            need(integer(d, "peak_waiting"), "peak_waiting"),
            need(num(d, "duration_s"), "duration_s"),
            bool(flag(d, "as_unbounded")),
            num(d, "ttft_p50_s"),
            num(d, "ttft_p90_s"),
            replica_list(d, "replicas") if "replicas" in d else (),
        )


@dataclass(frozen=True, slots=True)
class Point:
    """One capacity (GPU tokens, offload tokens): the hit rate and its GPU and offload parts."""

    capacity_tokens: int
    offload_tokens: int
    hit_rate: float
    gpu_hit_rate: float
    offload_hit_rate: float
    run: RunFigures | None = None  # replay's timeline

    def to_json(self) -> Json:
        out: Json = {
            "capacity_tokens": self.capacity_tokens,
            "offload_tokens": self.offload_tokens,
            "hit_rate": self.hit_rate,
            "gpu_hit_rate": self.gpu_hit_rate,
            "offload_hit_rate": self.offload_hit_rate,
        }
        if self.run is not None:
            out.update(self.run.to_json())
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Point:
        def rate(key: str) -> float:
            return need(num(d, key), key)

        return cls(
            need(integer(d, "capacity_tokens"), "capacity_tokens"),
            need(integer(d, "offload_tokens"), "offload_tokens"),
            rate("hit_rate"),
            rate("gpu_hit_rate"),
            rate("offload_hit_rate"),
            RunFigures.from_json(d) if "kv_blocks" in d else None,
        )


def _points(d: Mapping[str, Any]) -> tuple[Point, ...]:
    return tuple(Point.from_json(obj(p, "points")) for p in items(d, "points"))


@dataclass(frozen=True, slots=True)
class StackModel:
    """The recorded timeline's model: which cache model, whether running requests pin their
    blocks (and their outputs'), and the offload tier's policy (``None`` without one)."""

    engine: str  # the cache model, under the key it had first
    cache_model: str  # "stack" | "kvcache"
    pin: bool
    timed_requests: int  # requests with a recorded duration
    reserve_output: bool
    offload_policy: str | None

    def to_json(self) -> Json:
        return {
            "engine": self.engine,
            "cache_model": self.cache_model,
            "pin": self.pin,
            "timed_requests": self.timed_requests,
            "reserve_output": self.reserve_output,
            "offload_policy": self.offload_policy,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StackModel:
        return cls(
            need(text(d, "engine"), "engine"),
            need(text(d, "cache_model"), "cache_model"),
            need(flag(d, "pin"), "pin"),
            need(integer(d, "timed_requests"), "timed_requests"),
            need(flag(d, "reserve_output"), "reserve_output"),
            text(d, "offload_policy"),
        )


@dataclass(frozen=True, slots=True)
class RecordedSimulation:
    """The recorded timeline. ``trace``, ``format``, ``timeline`` and ``tokenizer`` are set when
    the workload was read from a file."""

    block_size: int
    theoretical_hit_rate: float
    points: tuple[Point, ...]
    requests: int
    sessions: int
    prompt_tokens: int
    footprint_tokens: int  # distinct blocks, in tokens
    capacity_for_theoretical_tokens: int  # the smallest GPU cache reaching the unbounded rate
    peak_pinned_tokens: int
    largest_request_tokens: int  # with its output, in whole blocks
    model: StackModel
    trace: str | None = None
    format: str | None = None
    timeline: str | None = None  # "recorded"
    tokenizer: str | None = None

    def to_json(self) -> Json:
        out: Json = {
            "schema": SCHEMA,
            "block_size": self.block_size,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "points": [p.to_json() for p in self.points],
            "requests": self.requests,
            "sessions": self.sessions,
            "prompt_tokens": self.prompt_tokens,
            "footprint_tokens": self.footprint_tokens,
            "capacity_for_theoretical_tokens": self.capacity_for_theoretical_tokens,
            "peak_pinned_tokens": self.peak_pinned_tokens,
            "largest_request_tokens": self.largest_request_tokens,
            "model": self.model.to_json(),
        }
        for key, v in (
            ("trace", self.trace),
            ("format", self.format),
            ("timeline", self.timeline),
            ("tokenizer", self.tokenizer),
        ):
            if v is not None:
                out[key] = v
        return out

    @classmethod
    def from_json(cls, v: object) -> RecordedSimulation:
        d = schema_obj(v, SCHEMA)

        def count(key: str) -> int:
            return need(integer(d, key), key)

        return cls(
            block_size=count("block_size"),
            theoretical_hit_rate=need(num(d, "theoretical_hit_rate"), "theoretical_hit_rate"),
            points=_points(d),
            requests=count("requests"),
            sessions=count("sessions"),
            prompt_tokens=count("prompt_tokens"),
            footprint_tokens=count("footprint_tokens"),
            capacity_for_theoretical_tokens=count("capacity_for_theoretical_tokens"),
            peak_pinned_tokens=count("peak_pinned_tokens"),
            largest_request_tokens=count("largest_request_tokens"),
            model=StackModel.from_json(sub(d, "model")),
            trace=text(d, "trace"),
            format=text(d, "format"),
            timeline=text(d, "timeline"),
            tokenizer=text(d, "tokenizer"),
        )


@dataclass(frozen=True, slots=True)
class KvFrom:
    """The capacity read from a vLLM server (``--kv-from``)."""

    source: str
    blocks: int | None
    block_size: int | None
    tokens: int

    def to_json(self) -> Json:
        return {
            "source": self.source,
            "blocks": self.blocks,
            "block_size": self.block_size,
            "tokens": self.tokens,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> KvFrom:
        return cls(
            need(text(d, "source"), "source"),
            integer(d, "blocks"),
            integer(d, "block_size"),
            need(integer(d, "tokens"), "tokens"),
        )


@dataclass(frozen=True, slots=True)
class ReplaySimulation:
    """Replay's timeline (``timeline``: ``replay``, or ``results`` at a results directory's
    send times). ``schedule`` and ``engine`` are the options it ran with, as given."""

    block_size: int
    theoretical_hit_rate: float | None
    points: tuple[Point, ...]
    timeline: str
    tokenizer: str
    prompts: str  # "hash ids" | "built and tokenised"
    requests: int
    warmup_requests: int
    sessions: int
    prompt_tokens: int
    footprint_tokens: int
    largest_request_tokens: int
    schedule: Mapping[str, Any]
    engine: Mapping[str, Any]
    kv_from: KvFrom | None = None
    trace: str | None = None
    format: str | None = None
    routing: Routing | None = None  # --replicas N > 1: the policy, imbalance, routing loss

    def to_json(self) -> Json:
        out: Json = {
            "schema": SCHEMA,
            "block_size": self.block_size,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "points": [p.to_json() for p in self.points],
            "timeline": self.timeline,
            "tokenizer": self.tokenizer,
            "prompts": self.prompts,
            "requests": self.requests,
            "warmup_requests": self.warmup_requests,
            "sessions": self.sessions,
            "prompt_tokens": self.prompt_tokens,
            "footprint_tokens": self.footprint_tokens,
            "largest_request_tokens": self.largest_request_tokens,
            "schedule": dict(self.schedule),
            "engine": dict(self.engine),
        }
        if self.kv_from is not None:
            out["kv_from"] = self.kv_from.to_json()
        if self.trace is not None:
            out["trace"] = self.trace
        if self.format is not None:
            out["format"] = self.format
        if self.routing is not None:
            out["routing"] = self.routing.to_json()
        return out

    @classmethod
    def from_json(cls, v: object) -> ReplaySimulation:
        d = schema_obj(v, SCHEMA)
        kv = opt_obj(d, "kv_from")
        routing = opt_obj(d, "routing")

        def count(key: str) -> int:
            return need(integer(d, key), key)

        return cls(
            block_size=count("block_size"),
            theoretical_hit_rate=num(d, "theoretical_hit_rate"),
            points=_points(d),
            timeline=need(text(d, "timeline"), "timeline"),
            tokenizer=need(text(d, "tokenizer"), "tokenizer"),
            prompts=need(text(d, "prompts"), "prompts"),
            requests=count("requests"),
            warmup_requests=count("warmup_requests"),
            sessions=count("sessions"),
            prompt_tokens=count("prompt_tokens"),
            footprint_tokens=count("footprint_tokens"),
            largest_request_tokens=count("largest_request_tokens"),
            schedule=free(d, "schedule"),
            engine=free(d, "engine"),
            kv_from=None if kv is None else KvFrom.from_json(kv),
            trace=text(d, "trace"),
            format=text(d, "format"),
            routing=None if routing is None else Routing.from_json(routing),
        )


Simulation = RecordedSimulation | ReplaySimulation


def simulation_from_json(v: object) -> Simulation:
    """Either timeline's object (replay's says which ``engine`` options it ran)."""
    d = schema_obj(v, SCHEMA)
    return ReplaySimulation.from_json(d) if "engine" in d else RecordedSimulation.from_json(d)
