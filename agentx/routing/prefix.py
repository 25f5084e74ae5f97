"""The ``prefix`` policy: cache-aware routing over a model of what each replica holds.

The model is built from what was routed: every request sent to a replica adds its chained
block hashes to that replica's modelled cache (an unbounded :class:`BlockSet`: it never
evicts, so on a replica whose real cache is small it overstates what is held). A request goes
where the longest prefix of it is held, with the escapes SGLang's ``cache_aware`` router has:

1. the system is imbalanced when the busiest replica has more than ``balance_abs`` requests
   in flight over the idlest *and* more than ``balance_rel`` times as many: then the least
   loaded replica takes it, whatever it holds;
2. otherwise the replica holding the longest prefix takes it when that prefix is at least
   ``cache_threshold`` of the request's blocks (ties: the less loaded);
3. otherwise (a new conversation, sharing at most a system prompt) the replica whose
   modelled cache is smallest takes it, so new trees spread over the replicas.

Blocks are the chained hashes of the request's tokens at the engine's block size (serve-sim's
router and ``simulate`` both have them).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentx.prefixcache.cache import BlockSet, hit_blocks
from agentx.prefixcache.hashing import HashArray
from agentx.routing.policy import Route, Router, RouteRequest


@dataclass(frozen=True, slots=True)
class PrefixThresholds:
    cache_threshold: float = 0.5  # share of a request's blocks a replica must hold
    balance_abs: int = 32  # in-flight requests, busiest minus idlest ...
    balance_rel: float = 1.5  # ... and busiest over idlest: both, for the load escape


class PrefixRouter(Router):
    route = Route.PREFIX

    def __init__(self, replicas: int, thresholds: PrefixThresholds | None = None) -> None:
        super().__init__(replicas)
        self.thresholds = thresholds or PrefixThresholds()
        self.caches = [BlockSet() for _ in range(replicas)]

    def imbalanced(self) -> bool:
        t = self.thresholds
        busiest, idlest = max(self.in_flight), min(self.in_flight)
        return busiest - idlest > t.balance_abs and busiest > t.balance_rel * idlest

    def held(self, replica: int, blocks: HashArray) -> int:
        """The blocks of ``blocks``' prefix the replica's modelled cache holds."""
        return hit_blocks(blocks, int(blocks.size), self.caches[replica])

    def pick(self, request: RouteRequest) -> int:
        if self.imbalanced():
            return self.least_loaded()
        blocks = request.blocks
        if blocks is not None and blocks.size:
            held = [self.held(r, blocks) for r in range(self.replicas)]
            best = max(held)
            if best and best >= self.thresholds.cache_threshold * blocks.size:
                return self.least_loaded([r for r in range(self.replicas) if held[r] == best])
        smallest = min(len(c) for c in self.caches)
        return self.least_loaded(
            [r for r in range(self.replicas) if len(self.caches[r]) == smallest]
        )

    def started(self, replica: int, request: RouteRequest) -> None:
        super().started(replica, request)
        blocks = request.blocks
        if blocks is not None and blocks.size:
            held = self.held(replica, blocks)
            if held < blocks.size:
                self.caches[replica].update(blocks[held:].tolist())
