"""The routing policies: which replica serves a request, one implementation for every driver
(serve-sim's built-in router, ``simulate --replicas``).

A driver describes each request as a :class:`RouteRequest` (the tree it belongs to, the size
of its prompt, and for ``prefix`` its chained block hashes), asks :meth:`Router.pick`, and
tells the router when the request starts (:meth:`Router.started`) and ends
(:meth:`Router.finished`), so the load each replica carries is the router's own count:

- ``round-robin``: request after request, replica after replica (what AIPerf does with
  several ``--url``).
- ``session``: sticky by tree (a session and its subagents) on a consistent-hash ring
  (:mod:`agentx.routing.ring`): adding a replica moves about 1/N of the trees.
- ``prefix``: cache-aware (:mod:`agentx.routing.prefix`).
- ``least-loaded``: the fewest requests in flight, then the least prompt in flight.
- ``random``: uniform, seeded (``--seed``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

from agentx.core.errors import UsageError
from agentx.core.options import Panel, flag
from agentx.prefixcache.hashing import HashArray
from agentx.routing.ring import HashRing


class Route(StrEnum):
    """``--route``: how requests are spread over the replicas."""

    ROUND_ROBIN = "round-robin"
    SESSION = "session"
    PREFIX = "prefix"
    LEAST_LOADED = "least-loaded"
    RANDOM = "random"


DEFAULT_ROUTE = Route.SESSION  # agent traffic re-sends its conversation: keep a tree together

ROUTE = flag(
    "--route",
    choices=Route,
    metavar="POLICY",  # the choices are in the help: listed here they squeeze every name
    panel=Panel.SERVER,
    help="how requests are spread over the replicas: round-robin (per request), session "
    "(sticky by tree, consistent hash), prefix (cache-aware with a load-balance escape), "
    "least-loaded (fewest in flight) or random (seeded by --seed)",
)


def parse_routes(text: object) -> tuple[Route, ...]:
    """``"round-robin,session"`` -> the policies, distinct, in the order given."""
    routes: list[Route] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        try:
            route = Route(item)
        except ValueError:
            raise UsageError(
                f"--route: {item[:40]!r} is not a policy ({', '.join(Route)})"
            ) from None
        if route in routes:
            raise UsageError(f"--route: {route} appears twice")
        routes.append(route)
    if not routes:
        raise UsageError(f"--route: give at least one policy ({', '.join(Route)})")
    return tuple(routes)


ROUTES = flag(  # sweep's --route: the policies to compare, one level each
    "--route",
    metavar="LIST",
    parse=parse_routes,
    panel=Panel.SERVER,
    help="with several --endpoint: comma list of routing policies (round-robin, session, "
    "prefix, least-loaded, random), one level per policy and --concurrency level; one policy "
    "routes every level as replay's --route does [default: session]",
)
ROUTER = flag(
    "--router",
    choices=Route,
    panel=Panel.SERVING,
    help="with --replicas N > 1: the built-in router's policy for requests to the top-level "
    "paths (the session headers of every --session-header preset are honoured)",
)
REPLICAS = flag(
    "--replicas",
    metavar="N",
    min=1,
    panel=Panel.SERVING,
    help="replicas of the engine, each with its own KV cache (and, in serve-sim, its own /metrics)",
)


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """What a router knows of one request. ``size``: its prompt tokens, for ``least-loaded``.
    ``blocks``: its chained block hashes, for ``prefix``."""

    key: str  # the tree (a session copy and its subagents): what ``session`` keeps together
    size: int = 0
    blocks: HashArray | None = None


class Router:
    """One policy over ``replicas`` replicas, with the load it has sent to each."""

    route: Route

    def __init__(self, replicas: int) -> None:
        if replicas < 1:
            raise ValueError("routing needs at least one replica")
        self.replicas = replicas
        self.in_flight = [0] * replicas
        self.size_in_flight = [0] * replicas
        self.sent = [0] * replicas

    def pick(self, request: RouteRequest) -> int:
        """The replica for ``request`` (call :meth:`started` when it is sent there)."""
        raise NotImplementedError

    def started(self, replica: int, request: RouteRequest) -> None:
        self.in_flight[replica] += 1
        self.size_in_flight[replica] += request.size
        self.sent[replica] += 1

    def finished(self, replica: int, request: RouteRequest) -> None:
        self.in_flight[replica] -= 1
        self.size_in_flight[replica] -= request.size

    def route_one(self, request: RouteRequest) -> int:
        """:meth:`pick` then :meth:`started`: the replica the request is sent to."""
        replica = self.pick(request)
        self.started(replica, request)
        return replica

    def least_loaded(self, among: list[int] | None = None) -> int:
        """The replica with the fewest requests in flight, then the least prompt in flight;
        ties go round the replicas (so an idle system still spreads its requests)."""
        candidates = range(self.replicas) if among is None else among
        start = sum(self.sent) % self.replicas
        return min(
            candidates,
            key=lambda r: (
                self.in_flight[r],
                self.size_in_flight[r],
                (r - start) % self.replicas,
            ),
        )


class RoundRobin(Router):
    route = Route.ROUND_ROBIN

    def __init__(self, replicas: int) -> None:
        super().__init__(replicas)
        self._next = 0

    def pick(self, request: RouteRequest) -> int:
        replica = self._next
        self._next = (self._next + 1) % self.replicas
        return replica


class Session(Router):
    """Sticky by tree on a consistent-hash ring; a request without a key goes round-robin."""

    route = Route.SESSION

    def __init__(self, replicas: int) -> None:
        super().__init__(replicas)
        self.ring = HashRing(replicas)
        self._keyless = RoundRobin(replicas)

    def pick(self, request: RouteRequest) -> int:
        if not request.key:
            return self._keyless.pick(request)
        return self.ring.replica_of(request.key)


class LeastLoaded(Router):
    route = Route.LEAST_LOADED

    def pick(self, request: RouteRequest) -> int:
        return self.least_loaded()


class Random(Router):
    """Uniform over the replicas, from a generator seeded once per run (``--seed``)."""

    route = Route.RANDOM

    def __init__(self, replicas: int, seed: int = 0) -> None:
        super().__init__(replicas)
        self._rng = random.Random(f"agentx-route:{seed}")

    def pick(self, request: RouteRequest) -> int:
        return self._rng.randrange(self.replicas)
