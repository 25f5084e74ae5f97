"""The figures of a run routed over several replicas, as every result file that has them holds
them (``simulate --replicas``'s ``routing`` block and its points' ``replicas``).

- :class:`Imbalance`: how unevenly the load went, max over mean and coefficient of variation
  (standard deviation over mean) of the requests and of the prompt tokens each replica got.
- :class:`ReplicaFigures`: one replica's share and hit rates (a replay's: all it measured of
  the replica).
- :class:`Routing`: the policy, the imbalance and the **routing loss**: the theoretical hit
  rate of one cache shared by every replica minus the one the replicas reach together when
  each holds only what was routed to it (unbounded caches both: what routing alone costs), in
  percentage points.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, integer, items, need, num, obj, sub, text, texts


@dataclass(frozen=True, slots=True)
class Imbalance:
    requests_max_over_mean: float | None  # None: nothing was sent
    requests_cv: float | None
    prompt_tokens_max_over_mean: float | None
    prompt_tokens_cv: float | None

    def to_json(self) -> Json:
        return {
            "requests_max_over_mean": self.requests_max_over_mean,
            "requests_cv": self.requests_cv,
            "prompt_tokens_max_over_mean": self.prompt_tokens_max_over_mean,
            "prompt_tokens_cv": self.prompt_tokens_cv,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Imbalance:
        return cls(
            num(d, "requests_max_over_mean"),
            num(d, "requests_cv"),
            num(d, "prompt_tokens_max_over_mean"),
            num(d, "prompt_tokens_cv"),
        )


@dataclass(frozen=True, slots=True)
class ReplicaFigures:
    """One replica's measured requests: how many, their prompt tokens (agentx's count of what
    was sent), the hit rate of its own unbounded cache (fed only what was routed to it) and,
    from an engine run, the hit rate its bounded cache gave and its TTFT median (``None``: not
    modelled or unknown).

    A replay (``measured``) adds what it measured of each replica, every key written even when
    unknown: ``endpoint`` (redacted; behind a server-side router, its ``/metrics`` URL),
    ``errors``, ``completion_tokens``, ``hit_rate`` (the cached tokens the replica reported),
    ``metrics_hit_rate`` (its ``/metrics`` counters over the run), the TTFT and ITL
    percentiles in seconds, ``kv_usage_peak`` (its KV-usage gauge's largest value, 0..1) and
    ``eviction_loss_points``: its theoretical hit rate minus the one it realised (reported,
    else ``/metrics``), what its bounded cache lost of what was routed to it. Behind a
    server-side router the requests are not attributed (``requests`` ``None``)."""

    replica: int
    requests: int | None
    prompt_tokens: int | None
    theoretical_hit_rate: float | None
    hit_rate: float | None = None
    ttft_p50_s: float | None = None
    measured: bool = False  # a replay's: the keys below are written
    endpoint: str | None = None
    errors: int | None = None
    completion_tokens: int | None = None
    metrics_hit_rate: float | None = None
    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    itl_p50_s: float | None = None
    itl_p90_s: float | None = None
    kv_usage_peak: float | None = None
    eviction_loss_points: float | None = None

    def to_json(self) -> Json:
        out: Json = {
            "replica": self.replica,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "theoretical_hit_rate": self.theoretical_hit_rate,
        }
        if self.measured:
            out.update(
                endpoint=self.endpoint,
                errors=self.errors,
                completion_tokens=self.completion_tokens,
                hit_rate=self.hit_rate,
                metrics_hit_rate=self.metrics_hit_rate,
                eviction_loss_points=self.eviction_loss_points,
                ttft_p50_s=self.ttft_p50_s,
                ttft_p90_s=self.ttft_p90_s,
                ttft_p99_s=self.ttft_p99_s,
                itl_p50_s=self.itl_p50_s,
                itl_p90_s=self.itl_p90_s,
                kv_usage_peak=self.kv_usage_peak,
            )
            return out
        if self.hit_rate is not None:
            out["hit_rate"] = self.hit_rate
        if self.ttft_p50_s is not None:
            out["ttft_p50_s"] = self.ttft_p50_s
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReplicaFigures:
        return cls(
            need(integer(d, "replica"), "replica"),
            integer(d, "requests"),
            integer(d, "prompt_tokens"),
            num(d, "theoretical_hit_rate"),
            num(d, "hit_rate"),
            num(d, "ttft_p50_s"),
            measured="metrics_hit_rate" in d,
            endpoint=text(d, "endpoint"),
            errors=integer(d, "errors"),
            completion_tokens=integer(d, "completion_tokens"),
            metrics_hit_rate=num(d, "metrics_hit_rate"),
            ttft_p90_s=num(d, "ttft_p90_s"),
            ttft_p99_s=num(d, "ttft_p99_s"),
            itl_p50_s=num(d, "itl_p50_s"),
            itl_p90_s=num(d, "itl_p90_s"),
            kv_usage_peak=num(d, "kv_usage_peak"),
            eviction_loss_points=num(d, "eviction_loss_points"),
        )


def replica_list(d: Mapping[str, Any], key: str) -> tuple[ReplicaFigures, ...]:
    return tuple(ReplicaFigures.from_json(obj(r, key)) for r in items(d, key))


@dataclass(frozen=True, slots=True)
class Routing:
    """How a run's requests were spread, and what the spreading cost the cache."""

    policy: str
    replicas: int
    theoretical_hit_rate: float | None  # one cache shared by every replica
    replica_theoretical_hit_rate: float | None  # each replica's own cache, together
    loss_points: float | None  # the two above's gap, in percentage points (>= 0)
    imbalance: Imbalance
    per_replica: tuple[ReplicaFigures, ...]
    # a replay's: the replicas' endpoints, in order (what ``merge`` holds shards to)
    endpoints: tuple[str, ...] | None = None

    def to_json(self) -> Json:
        out: Json = {
            "policy": self.policy,
            "replicas": self.replicas,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "replica_theoretical_hit_rate": self.replica_theoretical_hit_rate,
            "loss_points": self.loss_points,
            "imbalance": self.imbalance.to_json(),
            "per_replica": [r.to_json() for r in self.per_replica],
        }
        if self.endpoints is not None:
            out["endpoints"] = list(self.endpoints)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Routing:
        return cls(
            need(text(d, "policy"), "policy"),
            need(integer(d, "replicas"), "replicas"),
            num(d, "theoretical_hit_rate"),
            num(d, "replica_theoretical_hit_rate"),
            num(d, "loss_points"),
            Imbalance.from_json(sub(d, "imbalance")),
            replica_list(d, "per_replica"),
            texts(d, "endpoints") if "endpoints" in d else None,
        )
