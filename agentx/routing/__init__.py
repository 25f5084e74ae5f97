"""Serving systems of several replicas: the routing policies (``policy``, ``ring``,
``prefix``) every driver shares, a routed run's figures (``figures``), and the session
identity a server-side router reads (``headers``, which replay sends). Below the drivers
(``replay``, ``serve_sim``, ``simulate``), above the prefix-cache model the ``prefix`` policy
keeps per replica."""

from __future__ import annotations

from agentx.routing.headers import SESSION_HEADER, SessionHeader, SessionPreset, session_header
from agentx.routing.policy import (
    DEFAULT_ROUTE,
    REPLICAS,
    ROUTE,
    ROUTER,
    ROUTES,
    LeastLoaded,
    Random,
    RoundRobin,
    Route,
    Router,
    RouteRequest,
    Session,
    parse_routes,
)
from agentx.routing.prefix import PrefixRouter, PrefixThresholds


def make_router(route: Route | str, replicas: int, *, seed: int = 0) -> Router:
    """The router of ``route`` over ``replicas`` replicas (``seed``: ``random``'s draws)."""
    chosen = Route(route)
    if chosen is Route.ROUND_ROBIN:
        return RoundRobin(replicas)
    if chosen is Route.SESSION:
        return Session(replicas)
    if chosen is Route.PREFIX:
        return PrefixRouter(replicas)
    if chosen is Route.LEAST_LOADED:
        return LeastLoaded(replicas)
    return Random(replicas, seed)


def route_seed(seed: int, shard: int = 0, worker: int = 0) -> int:
    """``random``'s seed in one process: from ``--seed``, distinct per shard and worker (each
    draws for its own trees), the same for the same run; ``simulate`` (one process) draws as
    replay's first worker of its first shard does, so the two send a seeded run alike."""
    return (seed * 1_000_003 + shard) * 1_009 + worker


__all__ = [
    "DEFAULT_ROUTE",
    "REPLICAS",
    "ROUTE",
    "ROUTER",
    "ROUTES",
    "SESSION_HEADER",
    "PrefixRouter",
    "PrefixThresholds",
    "Route",
    "RouteRequest",
    "Router",
    "SessionHeader",
    "SessionPreset",
    "make_router",
    "parse_routes",
    "route_seed",
    "session_header",
]
