"""``simulate`` on replay's timeline: the engine model (:mod:`agentx.prefixcache.engine`, serve-sim's) driven
in virtual time by replay's schedule, one run per capacity: the hit rate a server of that KV
capacity would report for that replay. See docs/simulate.md ("which engine answers what").
"""

from __future__ import annotations

import dataclasses

from agentx.apis.translate import to_chat
from agentx.core.errors import AgentxError, UsageError
from agentx.core.percentiles import percentiles
from agentx.core.progress import Progress
from agentx.formats.options import FlatChains
from agentx.metrics.prometheus.capacity import read_kv_capacity
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE, make_hasher
from agentx.prefixcache.kvcache.unbounded import UNBOUNDED_TOKENS
from agentx.prefixcache.tokenizer import resolve_tokenizer
from agentx.results.routing import ReplicaFigures, Routing
from agentx.results.simulate import KvFrom, Point, ReplaySimulation, RunFigures
from agentx.routing import Router, make_router, route_seed
from agentx.routing.figures import RoutedRequest, routing_figures
from agentx.simulate.options import SimulateOptions, default_capacities
from agentx.simulate.prompts import LOADERS_KEPT, LOADERS_PER_LANE, PromptSource, threads_kept
from agentx.simulate.replayed import EngineRun, RecordedSends, Sends, SimRecord, run_engine
from agentx.simulate.schedule import SharedSchedule
from agentx.workload.build import BuildConfig
from agentx.workload.plan import ReplayPlan, build_plan
from agentx.workload.source import open_source

SIM_MODEL = "agentx-simulate"


def _capacities(o: SimulateOptions, bs: int, kv_from_tokens: int | None) -> tuple[int, ...] | None:
    if o.kv_blocks is not None:
        return tuple(b * bs for b in o.kv_blocks)
    if o.capacities_tokens is not None:
        return o.capacities_tokens
    if kv_from_tokens is not None:
        return (kv_from_tokens,)
    return None


def _point(
    cap: int,
    offload: int,
    run: EngineRun,
    bs: int,
    evicted: int | None = None,
    route: str | None = None,
) -> Point:
    t = run.totals
    gpu = t.rate(t.gpu_hit_tokens) or 0.0
    both = t.rate(t.gpu_hit_tokens + t.offload_hit_tokens) or 0.0
    # routed runs are compared by TTFT too (the output of one replica keeps its keys)
    ttft = percentiles([r.ttft_s for r in run.records if not r.warmup] if route else [])
    figures = RunFigures(
        kv_blocks=cap // bs,
        evicted_blocks=run.evicted_blocks if evicted is None else evicted,
        peak_waiting=run.peak_waiting,
        duration_s=round(run.duration_s, 3),
        as_unbounded=evicted is not None,
        ttft_p50_s=None if ttft.p50 is None else round(ttft.p50, 6),
        ttft_p90_s=None if ttft.p90 is None else round(ttft.p90, 6),
        replicas=() if route is None else _routed(run, route)[1],
    )
    return Point(cap, offload, both, gpu, both - gpu, figures)


def _routed(run: EngineRun, route: str) -> tuple[Routing, tuple[ReplicaFigures, ...]]:
    """The run's routing block (from its theoretical caches), and each replica's figures with
    what its bounded cache served and its TTFT median."""
    measured = [r for r in run.records if not r.warmup]
    block, by_replica = routing_figures(route, run.replicas, (_routed_request(r) for r in measured))
    per: list[ReplicaFigures] = []
    for fig, rows in zip(block.per_replica, by_replica, strict=True):
        records = [r for r in measured if r.replica == fig.replica]
        hit = sum(r.cached_tokens for r in records)
        ttft = percentiles([r.ttft_s for r in records])
        per.append(
            ReplicaFigures(
                fig.replica,
                fig.requests,
                fig.prompt_tokens,
                fig.theoretical_hit_rate,
                hit / fig.prompt_tokens if fig.prompt_tokens else None,
                None if ttft.p50 is None else round(ttft.p50, 6),
            )
        )
        assert len(rows) == len(records)
    return block, tuple(per)


def _routed_request(r: SimRecord) -> RoutedRequest:
    return RoutedRequest(
        r.replica, r.prompt_tokens, r.theoretical_hit_tokens, r.replica_theoretical_hit_tokens
    )


def _as_unbounded(cap: int, unbounded: EngineRun, bs: int) -> Point:
    """The point of a GPU capacity at least as large as one whose run refilled nothing and kept
    nobody waiting for KV room. Such a run had the unbounded cache's hits at every request, so
    the same timeline; a larger LRU cache, fed the same events, holds a superset of a smaller
    one's blocks, so it too has the unbounded run's records, and it need not be run. What it
    evicted follows from the unbounded cache's final free queue: at the end it holds the
    newest ``cap // bs`` entries, and every other named block was evicted once."""
    newest = unbounded.named_among_newest
    assert newest is not None
    kept = int(newest[min(cap // bs, newest.size - 1)])
    return _point(cap, 0, unbounded, bs, evicted=unbounded.named_blocks - kept)


def _hash_block_size(plan: ReplayPlan) -> int | None:
    """The block size of a hash-only trace's ids (its first session's first row), else None."""
    for i in range(len(plan.sessions)):
        session = plan.sessions.plan(i)
        if session is None:
            continue
        meta = session.threads[0].turns[0].meta
        if not meta.hash_only:
            return None
        return plan.source.load_session(session.source).exchange(meta).hash_block_size
    return None


def _most_threads(plan: ReplayPlan) -> int:
    """The most threads a session of the plan has."""
    sessions = (plan.sessions.plan(i) for i in range(len(plan.sessions)))
    return max((len(s.threads) for s in sessions if s is not None), default=1)


def simulate_replay(o: SimulateOptions, progress: Progress | None = None) -> ReplaySimulation:
    """The ``agentx.simulate/1`` object of the replay timeline (or of ``--from-results``).
    ``progress`` counts the requests of each pass (one per capacity)."""
    prog = progress or Progress()
    kv = read_kv_capacity(o.kv_from) if o.kv_from else None
    bs = o.block_size or (kv.block_size if kv else None) or DEFAULT_BLOCK_SIZE
    if kv is not None and kv.block_size and o.block_size and kv.block_size != o.block_size:
        raise UsageError(
            f"--block-size {o.block_size} disagrees with the server's block size {kv.block_size} "
            f"({kv.source})"
        )
    recorded = None
    w = o.workload
    api, salt, sessions, seed, entries = w.api, w.salt, w.sessions, w.rng_seed, w.max_entries
    flat = str(w.read.flat_chains)
    extra_body, ignore_eos = dict(w.extra_body), o.ignore_eos
    if o.from_results is not None:  # build the bodies that run sent: its own options
        from agentx.report.results_dir import load_results

        summary, recorded = load_results(o.from_results)
        cfg = summary.config
        api, salt = cfg.get("api", api), cfg.get("salt", salt)
        sessions, seed = cfg.get("sessions", sessions), cfg.get("seed", seed)
        entries = cfg.get("max_entries", entries)
        flat = str(cfg.get("flat_chains", flat))
        extra_body = cfg.get("extra_body") or extra_body
        ignore_eos = bool(cfg.get("ignore_eos", ignore_eos))
    trace = open_source(o.trace, flat_chains=flat != FlatChains.OFF)
    plan = build_plan(trace, sessions=sessions, seed=seed, api_mode=api, max_entries=entries)
    native = _hash_block_size(plan) if o.tokenizer is None else None
    if native is not None and o.block_size is None and kv is None:
        bs = native  # as `stats` and the recorded timeline count a hash-only trace
    hash_level = native is not None and bs % native == 0
    tokenizer = resolve_tokenizer(
        o.tokenizer, server_url=o.server_url, model=o.model, to_chat=to_chat
    )
    build = BuildConfig(api, o.model or SIM_MODEL, extra_body, ignore_eos, False)
    hasher = make_hasher(tokenizer, bs, max_threads=4096)
    lanes = o.schedule.concurrency if recorded is None else None  # a recorded run's: unknown
    source = PromptSource(
        build,
        hasher,
        plan.source,
        salt=salt,
        hash_block_size=bs if hash_level else None,
        loaders_kept=LOADERS_KEPT if lanes is None else LOADERS_PER_LANE * lanes + 2,
        threads=threads_kept(lanes, _most_threads(plan)),
    )

    def sends() -> Sends:
        if recorded is not None:
            return RecordedSends(plan.sessions, recorded)
        return SharedSchedule(plan.sessions, o.schedule, seed)

    params = dataclasses.replace(o.engine_params, block_size=bs)

    routed = o.replicas > 1
    route = str(o.route) if routed else None

    def router() -> Router | None:  # a fresh one per engine run: each run routes anew
        return make_router(o.route, o.replicas, seed=route_seed(seed or 0)) if routed else None

    def run(label: str, kv_tokens: int, offload_tokens: int = 0, **kw: bool) -> EngineRun:
        prog.phase(label, total=known, unit="requests")
        at = dataclasses.replace(params, kv_tokens=kv_tokens, offload_tokens=offload_tokens)
        kw.setdefault("theory", False)  # the unbounded pass measures it (routed: every pass)
        # routed figures are per replica, from the records; else the totals are enough
        return run_engine(
            sends(), source, at, prog.advance, router=router(), keep_records=routed, **kw
        )

    known = None
    unbounded = run(
        "simulating: unbounded cache",
        UNBOUNDED_TOKENS,
        keep_order=not routed,
        theory=True,
        unbounded=True,
    )
    totals = unbounded.totals
    if not totals.requests:
        raise AgentxError(f"{o.trace}: the replay sends no request to simulate")
    known = totals.requests  # every pass sends the same requests (their times differ)
    footprint = unbounded.named_blocks * bs
    largest = -(-totals.largest_tokens // bs) * bs
    caps = _capacities(o, bs, kv.tokens_at(bs) if kv else None)
    if caps is None:
        caps = tuple(c for c in default_capacities(bs, footprint) if c >= largest) or (largest,)
    offload = o.offload_tokens or 0
    gpu_points: dict[int, Point] = {}
    offload_points: dict[int, Point] = {}
    exact_from: int | None = None  # the smallest capacity that ran as an unbounded cache
    reach = unbounded.exact_from_blocks  # from it on, no capacity need run
    ascending = sorted(set(caps))
    for i, cap in enumerate(ascending, 1):
        label = f"simulating: capacity {i}/{len(ascending)} ({cap:,} tokens)"
        # routed: replicas' caches fed different events per capacity, so every one is run
        if reach is not None and cap // bs >= reach and not o.run_all and not routed:
            prog.phase(f"{label}: as unbounded (refills nothing on the unbounded timeline)")
            gpu_points[cap] = _as_unbounded(cap, unbounded, bs)
        elif exact_from is not None and not o.run_all and not routed:
            prog.phase(f"{label}: as unbounded (the {exact_from:,}-token cache refilled nothing)")
            gpu_points[cap] = _as_unbounded(cap, unbounded, bs)
        else:
            ran = run(label, cap)
            gpu_points[cap] = _point(cap, 0, ran, bs, route=route)
            if ran.as_unbounded:
                exact_from = cap
        if offload:
            offload_points[cap] = _point(
                cap, offload, run(f"{label} + offload", cap, offload), bs, route=route
            )
    points: list[Point] = []
    for cap in caps:
        points.append(gpu_points[cap])
        if offload:
            points.append(offload_points[cap])
    engine = dataclasses.asdict(params)
    for key in ("block_size", "kv_tokens", "offload_tokens"):
        engine.pop(key)
    return ReplaySimulation(
        block_size=bs,
        theoretical_hit_rate=totals.rate(totals.theoretical_hit_tokens),
        points=tuple(points),
        timeline="results" if recorded is not None else "replay",
        tokenizer=tokenizer.name,
        prompts="hash ids" if source.hashed_prompts else "built and tokenised",
        requests=totals.requests - totals.warmup_requests,
        warmup_requests=totals.warmup_requests,
        sessions=len(plan.sessions),
        prompt_tokens=totals.prompt_tokens,
        footprint_tokens=footprint,
        largest_request_tokens=largest,
        schedule=(
            {"from_results": str(o.from_results), "salt": salt, "api": api}
            if recorded is not None
            else dataclasses.asdict(o.schedule)
            | {"salt": salt, "api": api, "sessions": sessions, "seed": seed}
        ),
        engine=engine,
        kv_from=(None if kv is None else KvFrom(kv.source, kv.blocks, kv.block_size, kv.tokens)),
        routing=None if route is None else _routed(unbounded, route)[0],
    )
