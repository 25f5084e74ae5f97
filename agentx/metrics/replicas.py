"""A replay's ``routing`` block: what each replica of a system got and did, from the rows
(their ``replica``, the shared and per-replica theoretical hits) and each replica's own
``/metrics`` (:attr:`agentx.metrics.prometheus.ServerMetrics.replicas`).

The imbalance and the routing loss are :func:`agentx.routing.figures.routing_figures`' (one
computation for every driver that routes); this module adds what only a live run measures
per replica. Behind a server-side router (``--replica-metrics``) the rows name no replica:
each replica then has only its ``/metrics`` figures (the prompt-token imbalance among them),
and the routing loss and the request imbalance are unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from agentx.core.percentiles import percentiles
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics import rollups
from agentx.metrics.prometheus import ServerMetrics
from agentx.results.routing import Imbalance, ReplicaFigures, Routing
from agentx.routing.figures import RoutedRequest, routing_figures, spread

BEHIND_A_ROUTER = "server"  # the policy of a run whose endpoint routes (--replica-metrics)


@dataclass(frozen=True, slots=True)
class Replicas:
    """The replicas a run used: the policy that spread the requests (:data:`BEHIND_A_ROUTER`
    for a server-side router) and, in order, each replica's URL as written (redacted)."""

    policy: str
    endpoints: tuple[str, ...]

    @property
    def client_side(self) -> bool:
        return self.policy != BEHIND_A_ROUTER


def _s(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 6)


def _points(theoretical: float | None, realised: float | None) -> float | None:
    if theoretical is None or realised is None:
        return None
    return round(100 * (theoretical - realised), 4)


def _measured(
    base: ReplicaFigures,
    endpoint: str,
    rows: Sequence[RequestRecord],
    metrics: ServerMetrics | None,
) -> ReplicaFigures:
    ok = [r for r in rows if r.ok]
    ttft = percentiles(lat.known(lat.ttft_ms, ok))
    itl = percentiles(lat.pooled_itl_ms(ok), scratch=True)
    reported = rollups.reported_hit_rate(rows) if rows else None
    metrics_rate = metrics.hit_rate if metrics is not None else None
    usage = metrics.kv_cache_usage_perc if metrics is not None else None
    realised = reported if reported is not None else metrics_rate
    return dataclasses.replace(
        base,
        measured=True,
        endpoint=endpoint,
        errors=sum(1 for r in rows if not r.ok) if rows else None,
        completion_tokens=lat.total_tokens(lat.output_tokens, ok) if rows else None,
        hit_rate=reported,
        metrics_hit_rate=metrics_rate,
        ttft_p50_s=_s(ttft.p50),
        ttft_p90_s=_s(ttft.p90),
        ttft_p99_s=_s(ttft.p99),
        itl_p50_s=_s(itl.p50),
        itl_p90_s=_s(itl.p90),
        kv_usage_peak=usage.max if usage is not None else None,
        eviction_loss_points=_points(base.theoretical_hit_rate, realised),
    )


def replica_routing(
    replicas: Replicas, records: Sequence[RequestRecord], server: ServerMetrics | None
) -> Routing:
    """The ``routing`` block of a run over ``replicas`` from its measured rows and the
    replicas' ``/metrics`` figures (``server.replicas``, in replica order)."""
    measured = lat.measured(records)
    n = len(replicas.endpoints)
    pages = server.replicas if server is not None else ()
    metrics = [pages[i] if i < len(pages) else None for i in range(n)]
    if not replicas.client_side:
        per = tuple(
            _measured(ReplicaFigures(i, None, _prompt(metrics[i]), None), url, (), metrics[i])
            for i, url in enumerate(replicas.endpoints)
        )
        prompts = [f.prompt_tokens for f in per]
        known = [float(p) for p in prompts if p is not None]
        # the prompt tokens each replica's /metrics counted: how evenly the router spread the
        # load, when every replica counted (the requests it sent where are not known)
        p_max, p_cv = spread(known) if len(known) == n else (None, None)
        return Routing(
            replicas.policy,
            n,
            rollups.theoretical_hit_rate(measured),
            None,
            None,
            Imbalance(None, None, p_max, p_cv),
            per,
            replicas.endpoints,
        )
    routed = [
        RoutedRequest(
            r.replica,
            r.expected_prompt_tokens or 0,
            r.theoretical_hit_tokens if r.expected_prompt_tokens is not None else None,
            r.replica_theoretical_hit_tokens,
        )
        for r in measured
        if r.replica is not None and 0 <= r.replica < n
    ]
    block, _ = routing_figures(replicas.policy, n, routed)
    by_replica: list[list[RequestRecord]] = [[] for _ in range(n)]
    for r in measured:
        if r.replica is not None and 0 <= r.replica < n:
            by_replica[r.replica].append(r)
    per = tuple(
        _measured(base, replicas.endpoints[i], by_replica[i], metrics[i])
        for i, base in enumerate(block.per_replica)
    )
    return dataclasses.replace(block, per_replica=per, endpoints=replicas.endpoints)


def _prompt(m: ServerMetrics | None) -> int | None:
    """The prompt tokens a replica's ``/metrics`` counted over the run (behind a router)."""
    if m is None:
        return None
    for name in ("vllm:prompt_tokens", "sglang:prompt_tokens"):
        if name in m.raw_deltas:
            return int(m.raw_deltas[name])
    return None
