"""A routed run's figures from its requests: the imbalance and the routing loss
(:class:`agentx.results.routing.Routing`), computed once for every driver that routes.

Each request counts as what was routed where (its replica, its prompt tokens) and the two hits
:meth:`agentx.prefixcache.theory.HitRateMeter.row` gave it: the shared unbounded cache's and
its replica's own. The routing loss is their token-weighted gap, in percentage points.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentx.results.routing import Imbalance, ReplicaFigures, Routing


@dataclass(frozen=True, slots=True)
class RoutedRequest:
    replica: int
    prompt_tokens: int
    theoretical_hit_tokens: int | None  # the shared unbounded cache's hit
    replica_theoretical_hit_tokens: int | None  # the replica's own unbounded cache's


def spread(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Max over mean and coefficient of variation (population) of per-replica loads;
    ``(None, None)`` when there is no load."""
    mean = statistics.fmean(values) if values else 0.0
    if mean <= 0:
        return None, None
    return max(values) / mean, statistics.pstdev(values) / mean


def imbalance(requests: Sequence[int], prompt_tokens: Sequence[int]) -> Imbalance:
    r_max, r_cv = spread([float(v) for v in requests])
    p_max, p_cv = spread([float(v) for v in prompt_tokens])
    return Imbalance(r_max, r_cv, p_max, p_cv)


def _rate(hit: int, prompt: int, known: bool) -> float | None:
    return hit / prompt if known and prompt else None


def routing_figures(
    policy: str, replicas: int, requests: Iterable[RoutedRequest]
) -> tuple[Routing, list[list[RoutedRequest]]]:
    """The run's :class:`Routing` block, and its requests by replica (for per-replica
    figures a driver adds, e.g. an engine run's hit rate and TTFT)."""
    by_replica: list[list[RoutedRequest]] = [[] for _ in range(replicas)]
    for r in requests:
        by_replica[r.replica].append(r)
    per: list[ReplicaFigures] = []
    shared = local = prompt = 0
    known = True
    for i, rows in enumerate(by_replica):
        p = sum(r.prompt_tokens for r in rows)
        mine = [r.replica_theoretical_hit_tokens for r in rows]
        ok = all(h is not None for h in mine)
        hit = sum(h for h in mine if h is not None)
        per.append(ReplicaFigures(i, len(rows), p, _rate(hit, p, ok)))
        both = [r.theoretical_hit_tokens for r in rows]
        known = known and ok and all(h is not None for h in both)
        shared += sum(h for h in both if h is not None)
        local += hit
        prompt += p
    shared_rate = _rate(shared, prompt, known)
    local_rate = _rate(local, prompt, known)
    loss = (
        None
        if shared_rate is None or local_rate is None
        else round(100 * (shared_rate - local_rate), 4)
    )
    block = Routing(
        policy,
        replicas,
        shared_rate,
        local_rate,
        loss,
        imbalance(
            [len(rows) for rows in by_replica],
            [sum(r.prompt_tokens for r in rows) for rows in by_replica],
        ),
        tuple(per),
    )
    return block, by_replica
