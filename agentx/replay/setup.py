"""What a run decides before its lanes start, shared by the parent and every worker process.

:func:`probe_setup` asks the endpoint what it serves and fixes the run's :class:`RunSetup`
(model, server kind, block size, request shape, headers); :func:`lane_config` turns it into one
process's :class:`~agentx.replay.lanes.LaneConfig`; :func:`start_scraper` starts the Prometheus
scraper when the server has a metrics page. ``run`` (one process) and ``workers`` (N processes)
both build on this module and never on each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import hashlib
import secrets
import ssl
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from agentx.apis import Api
from agentx.core.errors import EndpointError, UsageError
from agentx.core.urls import redact_url
from agentx.metrics.prometheus import MetricsScraper
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE
from agentx.replay.client import make_http_client, make_stream_client, tls_context
from agentx.replay.endpoint import (
    IGNORE_EOS_SERVERS,
    ServerInfo,
    base_url,
    check_model,
    default_metrics_url,
    endpoint_note,
    probe,
    split_endpoint,
)
from agentx.replay.http1.pool import StreamClient
from agentx.replay.lanes import LaneConfig
from agentx.replay.options import Assistant, ReplayOptions
from agentx.replay.preflight import send_test_request
from agentx.replay.replicas import Replica, ReplicaScrapers, ReplicaSet
from agentx.routing import route_seed
from agentx.workload.build import BuildConfig
from agentx.workload.plan import ReplayPlan


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What the probe decided, shared with worker processes (picklable)."""

    options: ReplayOptions
    root_url: str
    model: str
    server: ServerInfo
    build: BuildConfig
    block_size: int
    headers: dict[str, str] = field(repr=False)  # carries the API key: never printed
    params: dict[str, str] = field(repr=False)  # the endpoint's query (a gateway's key, maybe)
    max_connections: int
    nonce: str
    metrics_url: str | None
    lanes: int  # lanes that can have work (see lane_count); the run's lanes are 0..lanes-1
    warnings: tuple[str, ...] = ()  # what the set-up decided that the figures' reader must know
    # several --endpoint (routed here) or a router's --replica-metrics; () for one server
    replicas: tuple[Replica, ...] = ()


MAX_LANES = 1_000_000  # in one run (--shard spreads more over machines)


def lane_count(options: ReplayOptions, plan: ReplayPlan) -> int:
    """``--concurrency``, bounded by the work there is: no more lanes than ``--max-requests``
    (a lane that sends nothing is only memory), nor than sessions when nothing recycles them."""
    s = options.schedule
    n = s.concurrency
    if s.max_requests is not None:
        n = min(n, s.max_requests)
    elif s.duration_s is None:
        n = min(n, len(plan.sessions))
    if n > MAX_LANES:
        raise UsageError(
            f"--concurrency {s.concurrency:,}: at most {MAX_LANES:,} lanes per run "
            "(--shard I/N spreads a run over machines)"
        )
    return max(n, options.n_workers)


def auth_headers(options: ReplayOptions) -> dict[str, str]:
    key = options.resolved_api_key()
    if not key:
        return {}
    headers = {"authorization": f"Bearer {key}"}
    if options.workload.api == "messages" or options.workload.api == "native":
        headers["x-api-key"] = key
    if options.workload.api == "native":
        headers["x-goog-api-key"] = key  # Gemini-compatible endpoints
    return headers


def request_headers(options: ReplayOptions) -> dict[str, str]:
    """The headers of every request (names in lower case): the API key's, then ``--header``'s,
    which win."""
    return {**auth_headers(options), **{k.lower(): v for k, v in options.headers}}


def same_origin(a: str, b: str) -> bool:
    """Whether two URLs share scheme, host and port (the default port of the scheme counted)."""
    pa, pb = urlsplit(a), urlsplit(b)
    try:
        ports = [p.port or {"http": 80, "https": 443}.get(p.scheme) for p in (pa, pb)]
    except ValueError:
        return False
    return (pa.scheme, (pa.hostname or "").lower(), ports[0]) == (
        pb.scheme,
        (pb.hostname or "").lower(),
        ports[1],
    )


def metrics_credentials(
    options: ReplayOptions, metrics_url: str, endpoint: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """(headers, query parameters) of a scrape of ``metrics_url``: on the endpoint's origin
    (``endpoint``: the replica's, default the first), the requests' own (the API key,
    ``--header``, the endpoint's query); on another origin, none of them, so a key is never
    sent to a server it was not given for. ``--metrics-header`` goes with every scrape, and
    wins."""
    own = {k.lower(): v for k, v in options.metrics_headers}
    origin = options.endpoint if endpoint is None else endpoint
    if same_origin(origin, metrics_url):
        return {**request_headers(options), **own}, split_endpoint(origin)[1]
    return own, {}


def run_tls(options: ReplayOptions) -> ssl.SSLContext:
    """How the run verifies an https server (``--insecure``, ``--ca-bundle``)."""
    return tls_context(insecure=options.insecure, ca_bundle=options.ca_bundle)


async def probe_setup(options: ReplayOptions, plan: ReplayPlan) -> RunSetup:
    """Probe the endpoint and fix the run's set-up. Raises ``EndpointError``."""
    lanes = lane_count(options, plan)
    root, params = split_endpoint(options.endpoint)
    headers = request_headers(options)
    metrics_url = (
        (options.metrics_url or default_metrics_url(options.endpoint))
        if options.scrape_metrics
        else None
    )
    async with (
        make_http_client(
            root,
            timeout_s=options.timeout_s,
            max_connections=4,
            headers=headers,
            params=params,
            tls=run_tls(options),
        ) as client,
        metrics_client(options, metrics_url) as scrape_client,
    ):
        info = await probe(client, options.endpoint, metrics_url, scrape_client)
    model = options.model or (info.models[0] if info.models else None)
    if not model:
        shown = redact_url(options.endpoint)
        raise EndpointError(f"{shown} lists no models on /v1/models: pass --model")
    if options.preflight:
        check_model(info, model, options.endpoint)
    if options.workload.api == "messages" or (
        options.workload.api == "native" and Api.ANTHROPIC_MESSAGES in plan.apis
    ):
        headers.setdefault("anthropic-version", "2023-06-01")
    ignore_eos = (
        options.ignore_eos if options.ignore_eos is not None else info.kind in IGNORE_EOS_SERVERS
    )
    build = BuildConfig(
        api_mode=options.workload.api,
        model=model,
        extra_body=dict(options.workload.extra_body),
        ignore_eos=ignore_eos,
        live=options.assistant is Assistant.LIVE,
    )
    lanes_per_worker = -(-lanes // options.n_workers)
    note = endpoint_note(options.endpoint)
    setup = RunSetup(
        options=options,
        root_url=root,
        model=model,
        server=info,
        build=build,
        block_size=options.block_size or info.block_size or DEFAULT_BLOCK_SIZE,
        headers=headers,
        params=params,
        max_connections=lanes_per_worker * plan.max_threads + 8,
        nonce=marker_nonce(options.workload.seed),
        metrics_url=metrics_url if info.metrics_text else None,
        lanes=lanes,
        warnings=(note,) if note else (),
    )
    if options.preflight:
        async with stream_client(setup) as client:
            await send_test_request(
                client,
                plan,
                build,
                endpoint=options.endpoint,
                nonce=setup.nonce,
                headers=headers,
                timeout_s=options.timeout_s,
            )
    if options.routed or options.replica_metrics:
        setup = replace(setup, replicas=await _probe_replicas(setup, plan))
    return setup


async def _probe_replicas(setup: RunSetup, plan: ReplayPlan) -> tuple[Replica, ...]:
    """Every replica of the run, each endpoint after the first probed, its model checked and
    sent the test request as the first was (the first failure names its endpoint); or a
    server-side router's replicas, by their ``--replica-metrics`` pages (each probed once)."""
    o = setup.options
    if not o.routed:
        found = []
        for i, url in enumerate(o.replica_metrics):
            async with metrics_client(o, url) as client:
                answers = await MetricsScraper(url, client).probe()
            found.append(Replica(i, None, None, {}, url if answers else None))
        return tuple(found)
    replicas = [
        Replica(0, o.endpoint, setup.root_url, setup.params, setup.metrics_url),
    ]
    for i, endpoint in enumerate(o.endpoints[1:], start=1):
        root, params = split_endpoint(endpoint)
        metrics_url = default_metrics_url(endpoint) if o.scrape_metrics else None
        async with (
            make_http_client(
                root,
                timeout_s=o.timeout_s,
                max_connections=4,
                headers=setup.headers,
                params=params,
                tls=run_tls(o),
            ) as client,
            metrics_client(o, metrics_url, endpoint) as scrape_client,
        ):
            info = await probe(client, endpoint, metrics_url, scrape_client)
        if o.preflight:
            check_model(info, setup.model, endpoint)
        replica = Replica(i, endpoint, root, params, metrics_url if info.metrics_text else None)
        if o.preflight:
            async with stream_client(setup, replica) as stream:
                await send_test_request(
                    stream,
                    plan,
                    setup.build,
                    endpoint=endpoint,
                    nonce=setup.nonce,
                    headers=setup.headers,
                    timeout_s=o.timeout_s,
                )
        replicas.append(replica)
    return tuple(replicas)


def marker_nonce(seed: int | None) -> str:
    """What every cache-bust marker of a run derives from: drawn afresh per run (so a run never
    finds an earlier run's prefixes in the server's cache), or from ``--seed`` when one is given
    (the same seed sends the same bytes)."""
    if seed is None:
        return secrets.token_hex(3)
    return hashlib.sha256(f"agentx-marker:{seed}".encode()).hexdigest()[:6]


def lane_config(
    setup: RunSetup, lanes: tuple[int, ...], max_requests: int | None, worker: int
) -> LaneConfig:
    """The lanes config of one process (``worker`` 0 when the run has one process)."""
    o = setup.options
    single = o.request_rate is not None
    arrivals = o.arrivals()
    if arrivals is not None:  # this process's share of the run's arrivals
        shard, shards = o.shard
        arrivals = arrivals.share(shard * o.n_workers + worker, shards * o.n_workers)
    return LaneConfig(
        build=setup.build,
        # the run's rules (recycling follows the run's --max-requests), this worker's share
        schedule=replace(o.schedule, max_requests=max_requests),
        lanes=lanes,
        seed=o.workload.rng_seed,
        arrivals=arrivals,
        timeout_s=o.timeout_s,
        salt=o.workload.salt,
        # --request-rate: one session's requests may run on any worker and share its marker
        nonce=f"{setup.nonce}{o.shard[0]:x}{'' if single else f'{worker:x}'}-",
        id_prefix=f"{o.shard[0]}.{worker}.",
        session_header=o.session_header,
        max_failed_ratio=o.max_failed_ratio,
        gate_after=len(lanes),
        single_requests=single,
    )


def http_client(
    setup: RunSetup, max_connections: int = 4, replica: Replica | None = None
) -> httpx.AsyncClient:
    """The client off the hot path (metrics scrapes, cache reset) talks through; to
    ``replica``'s root and with its query, when given."""
    root, params = setup.root_url, setup.params
    if replica is not None and replica.root_url is not None:
        root, params = replica.root_url, replica.params
    return make_http_client(
        root,
        timeout_s=setup.options.timeout_s,
        max_connections=max_connections,
        headers=setup.headers,
        params=params,
        tls=run_tls(setup.options),
    )


def metrics_client(
    options: ReplayOptions, metrics_url: str | None, endpoint: str | None = None
) -> httpx.AsyncClient:
    """The client the Prometheus scrapes of ``metrics_url`` go through, with only the
    credentials :func:`metrics_credentials` allows it (``endpoint``: the replica's)."""
    headers, params = (
        metrics_credentials(options, metrics_url, endpoint) if metrics_url else ({}, {})
    )
    return make_http_client(
        base_url(metrics_url) if metrics_url else split_endpoint(options.endpoint)[0],
        timeout_s=options.timeout_s,
        max_connections=2,
        headers=headers,
        params=params,
        tls=run_tls(options),
    )


def stream_client(setup: RunSetup, replica: Replica | None = None) -> StreamClient:
    """The client the lanes talk through (to ``replica`` when routing over several):
    one connection per concurrently running thread."""
    root_url, params = setup.root_url, setup.params
    if replica is not None:
        assert replica.root_url is not None
        root_url, params = replica.root_url, replica.params
    return make_stream_client(
        root_url,
        timeout_s=setup.options.timeout_s,
        max_connections=setup.max_connections,
        headers=setup.headers,
        params=params,
        tls=run_tls(setup.options),
    )


def replica_set(setup: RunSetup, worker: int) -> ReplicaSet | None:
    """The lanes' clients to every replica and process ``worker``'s router, for a run over
    several endpoints (``None``: one endpoint, the lanes use :func:`stream_client`)."""
    o = setup.options
    if not o.routed:
        return None
    clients = [stream_client(setup, r) for r in setup.replicas]
    return ReplicaSet.of(clients, o.route, route_seed(o.workload.rng_seed, o.shard[0], worker))


@contextlib.asynccontextmanager
async def lane_replicas(setup: RunSetup, worker: int) -> AsyncIterator[ReplicaSet | None]:
    """:func:`replica_set`, its clients open for the block (``None``: one endpoint)."""
    replicas = replica_set(setup, worker)
    if replicas is None:
        yield None
        return
    async with replicas:
        yield replicas


async def start_barrier(options: ReplayOptions) -> str | None:
    """``--start-at``: wait until then (after loading and probing, before warm-up and the
    scraper's baseline), so the shards of a run start together. Returns a warning when the time
    had already passed (the run then starts at once)."""
    if options.start_at_s is None:
        return None
    at = datetime.fromtimestamp(options.start_at_s, UTC).isoformat(timespec="milliseconds")
    delay = options.start_at_s - time.time()
    if delay <= 0:
        warning = (
            f"--start-at {at} had passed {-delay:.1f} s before set-up finished: started at once"
        )
        print(f"agentx: --start-at {at} has passed: starting now", file=sys.stderr)
        return warning
    print(f"agentx: waiting {delay:.1f} s for --start-at {at}", file=sys.stderr)
    while (delay := options.start_at_s - time.time()) > 0:
        await asyncio.sleep(min(delay, 1.0))
    return None


async def start_scraper(setup: RunSetup, client: httpx.AsyncClient) -> MetricsScraper | None:
    """The run's scraper of ``setup.metrics_url``; ``client``: a :func:`metrics_client`. With
    replicas, every replica's page too (:class:`ReplicaScrapers`, their figures in the
    result's ``replicas``)."""
    headline = MetricsScraper(setup.metrics_url, client) if setup.metrics_url else None
    pages = [r for r in setup.replicas if r.metrics_url is not None]
    if not pages:
        if headline is not None:
            await headline.start()
        return headline
    o = setup.options
    clients = [metrics_client(o, r.metrics_url, r.endpoint) for r in pages]
    # a run over several endpoints: the replicas' counters added up are the system's figures
    scraper = ReplicaScrapers(setup.replicas, clients, None if o.routed else headline)
    await scraper.start()
    return scraper


M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
LARGE_BLOCK_BYTES = 256 * 1024


def return_large_blocks() -> None:
    """Make glibc hand every allocation over 256 KiB straight back to the OS when freed.

    A replay allocates and frees hundreds of request bodies of ~0.1-4 MB; glibc's default
    raises its mmap threshold after the first frees, so those bodies then come from the heap,
    which fragments and never shrinks: RSS grew ~3x over a 3,000-request corpus replay. Fixing
    the threshold keeps RSS at what is live. A no-op off glibc.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)
    except (OSError, AttributeError):  # musl and others: nothing to tune
        return
