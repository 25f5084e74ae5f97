"""Replay against a system of replicas: several ``--endpoint``, each its own origin, its own
connection pool and its own ``/metrics``, the requests spread by ``--route``
(:mod:`agentx.routing`); or one endpoint that is a server-side router, its replicas'
``/metrics`` given by ``--replica-metrics``.

- :class:`Replica`: one replica as the run talks to it.
- :class:`ReplicaSet`: one process's lanes' clients, a pool per replica, and its router: every
  request asks it where to go (:meth:`ReplicaSet.pick`) and says when it ended
  (:meth:`ReplicaSet.finished`), so the router's load counts are the requests in flight.
- :func:`body_windows` over :func:`engine_order`: what the ``prefix`` policy compares instead
  of token block hashes (tokenising a 100K-token prompt on the hot path would delay every
  dispatch).
- :class:`ReplicaScrapers`: every replica's ``/metrics`` scraped around the run, each one's
  figures kept, their prefix-cache counters added up for the run's headline.

With ``--workers N`` each process routes the trees on its own lanes with its own router (a
tree's requests are always sent by one process): ``session`` is the same consistent-hash ring
in every process, ``prefix`` models each replica from what this process routed there,
``round-robin`` alternates per process and ``least-loaded`` counts this process's requests in
flight (docs/replay.md).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import numpy as np
import orjson

from agentx.apis.registry import family
from agentx.metrics.prometheus import MetricsScraper, ServerMetrics
from agentx.prefixcache.hashing import HashArray
from agentx.replay.http1.pool import StreamClient
from agentx.routing import Route, Router, RouteRequest, make_router

WINDOW_BYTES = 1024  # of a rendered body: about 256 tokens of English text or JSON
BYTES_PER_TOKEN = 4  # a body's prompt size for least-loaded, without tokenising it


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica: ``endpoint`` as given (``None``: behind a server-side router, only its
    ``/metrics`` known), the root its API paths go under and the query sent with every request;
    ``metrics_url`` ``None`` when it has no Prometheus page (or scraping is off)."""

    index: int
    endpoint: str | None
    root_url: str | None
    params: dict[str, str] = field(repr=False)
    metrics_url: str | None


def body_windows(body: bytes, window: int = WINDOW_BYTES) -> HashArray:
    """The ``prefix`` policy's stand-in for a request's block hashes: chained hashes of the
    rendered prompt's whole ``window``-byte windows (the last, partial one left out, as an
    engine leaves out a partial block), over the body's parts in the engine's order
    (:func:`engine_order`). Two requests share the first k hashes exactly when their prompts
    share the first k windows: a turn that re-sends its conversation shares the windows of what
    it re-sent, a new conversation those of the system prompt and tools it shares. A model of
    the prefix each replica holds, not the server's token blocks."""
    n = len(body) // window
    out = np.empty(n, dtype=np.uint64)
    prev = b""
    view = memoryview(body)
    for i in range(n):
        prev = hashlib.blake2b(
            view[i * window : (i + 1) * window], digest_size=8, key=prev
        ).digest()
        out[i] = int.from_bytes(prev, "little")
    return out


def engine_order(body: bytes, api: str) -> bytes:
    """A request body's prompt parts in the order an engine renders them: the out-of-band system
    prompt and the tools before the conversation, as chat templates put them. In the JSON body
    they may come after it (an Anthropic body's ``system`` follows its ``messages``; every
    family's ``tools`` follow the conversation), and windows cut in the body's own order would
    miss what new conversations share with earlier ones: their system prompt and tools. A body
    that is not a JSON object is windowed as it is."""
    try:
        d = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not isinstance(d, dict):
        return body
    f = family(api)
    parts = (d.get(f.system_key), d.get("tools"), d.get(f.conversation_key))
    return b"\n".join(orjson.dumps(p) for p in parts if p is not None)


class ReplicaSet:
    """One process's clients to every replica and the router that picks among them."""

    def __init__(self, clients: Sequence[StreamClient], router: Router) -> None:
        if len(clients) != router.replicas:
            raise ValueError("one client per replica")
        self.clients = list(clients)
        self.router = router
        self._stack = contextlib.AsyncExitStack()

    @classmethod
    def of(cls, clients: Sequence[StreamClient], route: Route, seed: int) -> ReplicaSet:
        return cls(clients, make_router(route, len(clients), seed=seed))

    async def __aenter__(self) -> ReplicaSet:
        for c in self.clients:
            await self._stack.enter_async_context(c)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for c in self.clients for s in c.secrets)

    def pick(self, key: str, body: bytes, api: str) -> tuple[int, RouteRequest]:
        """The replica a request of tree ``key`` with ``body`` of ``api`` goes to (counted as
        started)."""
        prefix = self.router.route is Route.PREFIX
        blocks = body_windows(engine_order(body, api)) if prefix else None
        request = RouteRequest(key, len(body) // BYTES_PER_TOKEN, blocks)
        return self.router.route_one(request), request

    def finished(self, replica: int, request: RouteRequest) -> None:
        self.router.finished(replica, request)


class ReplicaScrapers(MetricsScraper):
    """Every replica's ``/metrics`` (those that have one), scraped side by side. :meth:`stop`
    returns their prefix-cache counters added up (``None`` hit rate unless every replica
    counted), each replica's own figures in ``replicas`` (in replica order; a replica without
    a page has empty figures). ``clients``: one per replica with a page (closed by :meth:`stop`)."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        clients: Sequence[httpx.AsyncClient],
        headline: MetricsScraper | None = None,
    ) -> None:
        super().__init__(headline.url if headline is not None else "", clients[0])
        self.replicas = list(replicas)
        with_page = [r for r in replicas if r.metrics_url is not None]
        self.scrapers = {
            r.index: MetricsScraper(r.metrics_url or "", c)
            for r, c in zip(with_page, clients, strict=True)
        }
        self.headline = headline  # a server-side router's own page: the run's server figures
        self._clients = list(clients)

    def _all(self) -> list[MetricsScraper]:
        return [*self.scrapers.values(), *([self.headline] if self.headline else [])]

    async def start(self) -> None:
        for s in self._all():
            await s.start()

    async def begin_window(self) -> None:
        for s in self._all():
            await s.begin_window()

    async def stop(self) -> ServerMetrics:
        try:
            for s in self._all():
                await s.stop()
        finally:
            for c in self._clients:
                with contextlib.suppress(Exception):
                    await c.aclose()
        return self.result()

    def result(self) -> ServerMetrics:
        per = tuple(
            self.scrapers[r.index].result() if r.index in self.scrapers else ServerMetrics()
            for r in self.replicas
        )
        if self.headline is not None:
            return replace(self.headline.result(), replicas=per)
        return replace(combined(per), replicas=per)

    @property
    def latest(self) -> dict[str, Any] | None:
        first = next(iter(self.scrapers.values()), None)
        return first.latest if first is not None else None


def combined(per: Sequence[ServerMetrics]) -> ServerMetrics:
    """Several replicas' figures as one system's: prefix-cache queries and hits added up (the
    hit rate ``None`` unless every replica counted them), raw deltas added, scrapes counted."""
    counted = [m for m in per if m.queries is not None and m.hits is not None]
    whole = bool(per) and len(counted) == len(per)
    queries = sum(m.queries or 0.0 for m in counted) if whole else None
    hits = sum(m.hits or 0.0 for m in counted) if whole else None
    raw: dict[str, float] = {}
    for m in per:
        for k, v in m.raw_deltas.items():
            raw[k] = raw.get(k, 0.0) + v
    sources = {m.source for m in counted}
    return ServerMetrics(
        hit_rate=hits / queries if queries and hits is not None else None,
        raw_deltas=dict(sorted(raw.items())),
        source=sources.pop() if len(sources) == 1 else None,
        queries=queries,
        hits=hits,
        scrapes=min((m.scrapes for m in per), default=0),
        scrape_errors=sum(m.scrape_errors for m in per),
    )
