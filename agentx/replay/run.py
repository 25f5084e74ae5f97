"""``run_replay(options) -> ReplayResult``: probe, replay, measure, write the results directory.

The flow: read and plan the trace (fails fast on bad input), probe the endpoint (fails fast when
it is unreachable), scrape its Prometheus page around the run, run the lanes (in this process,
or in ``--workers`` processes), then, off the hot path, compute each request's theoretical hit
against exactly what was sent, build ``summary.json`` and write ``requests.parquet``,
``summary.json`` and ``report.html``. Ctrl-C stops the run and still writes what was measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from agentx.errors import EndpointError, UsageError
from agentx.models import API_ANTHROPIC_MESSAGES
from agentx.prefix import DEFAULT_BLOCK_SIZE
from agentx.replay.build import BuildConfig
from agentx.replay.client import make_http_client
from agentx.replay.endpoint import (
    IGNORE_EOS_SERVERS,
    ServerInfo,
    base_url,
    default_metrics_url,
    probe,
)
from agentx.replay.finish import Collected, ReplayResult, collect, finish_run
from agentx.replay.lanes import Engine, EngineConfig
from agentx.replay.options import ReplayOptions
from agentx.replay.plan import ReplayPlan, build_plan, load_exchanges
from agentx.replay.progress import ProgressView, Snapshot
from agentx.replay.theory import SentLog, remove_quietly

PROGRESS_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What the probe decided, shared with worker processes."""

    options: ReplayOptions
    root_url: str
    model: str
    server: ServerInfo
    build: BuildConfig
    block_size: int
    headers: dict[str, str] = field(repr=False)  # carries the API key: never printed
    max_connections: int
    nonce: str
    metrics_url: str | None


def default_output_dir() -> Path:
    return Path("results") / datetime.now().strftime("replay-%Y%m%d-%H%M%S")


def auth_headers(options: ReplayOptions) -> dict[str, str]:
    key = options.resolved_api_key()
    if not key:
        return {}
    headers = {"authorization": f"Bearer {key}"}
    if options.api == "messages" or options.api == "native":
        headers["x-api-key"] = key
    return headers


def run_replay(options: ReplayOptions) -> ReplayResult:
    """Run one replay. Raises ``AgentxError`` (bad trace, bad options, unreachable endpoint)."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    slo_checks = _parse_slo(options.slo)
    plan = build_plan(
        load_exchanges(options.trace),
        sessions=options.sessions,
        seed=options.seed,
        shard=options.shard,
        api_mode=options.api,
    )
    if options.workers > len(plan.sessions):
        raise UsageError(
            f"--workers {options.workers} exceeds the {len(plan.sessions)} sessions to replay"
        )
    setup = asyncio.run(_probe(options, plan))
    out_dir = options.output_dir or default_output_dir()
    tmp = Path(tempfile.mkdtemp(prefix="agentx-replay-"))
    try:
        if options.workers == 1:
            collected = asyncio.run(_run_here(setup, plan, tmp))
        else:
            from agentx.replay.workers import run_workers

            collected = run_workers(setup, plan, tmp)
        return finish_run(setup, plan, collected, slo_checks, started_at, out_dir)
    finally:
        for p in tmp.glob("*"):
            remove_quietly(p)
        with contextlib.suppress(OSError):
            tmp.rmdir()


def _parse_slo(spec: str | None) -> list[Any]:
    if not spec:
        return []
    from agentx.metrics.slo import parse_slo

    return parse_slo(spec)


async def _probe(options: ReplayOptions, plan: ReplayPlan) -> RunSetup:
    root = base_url(options.endpoint)
    headers = auth_headers(options)
    metrics_url = (
        (options.metrics_url or default_metrics_url(options.endpoint))
        if options.scrape_metrics
        else None
    )
    async with make_http_client(
        root, timeout_s=options.timeout_s, max_connections=4, headers=headers
    ) as client:
        info = await probe(client, options.endpoint, metrics_url)
    model = options.model or (info.models[0] if info.models else None)
    if not model:
        raise EndpointError(f"{options.endpoint} lists no models on /v1/models: pass --model")
    if options.api == "messages" or (
        options.api == "native" and API_ANTHROPIC_MESSAGES in plan.apis
    ):
        headers.setdefault("anthropic-version", "2023-06-01")
    ignore_eos = (
        options.ignore_eos if options.ignore_eos is not None else info.kind in IGNORE_EOS_SERVERS
    )
    build = BuildConfig(
        api_mode=options.api,
        model=model,
        extra_body=dict(options.extra_body),
        ignore_eos=ignore_eos,
        live=options.assistant == "live",
    )
    lanes_per_worker = -(-options.concurrency // options.workers)
    return RunSetup(
        options=options,
        root_url=root,
        model=model,
        server=info,
        build=build,
        block_size=options.block_size or info.block_size or DEFAULT_BLOCK_SIZE,
        headers=headers,
        max_connections=lanes_per_worker * plan.max_threads + 8,
        nonce=secrets.token_hex(3),
        metrics_url=metrics_url if info.metrics_text else None,
    )


def engine_config(
    setup: RunSetup, lanes: tuple[int, ...], max_requests: int | None, worker: int
) -> EngineConfig:
    o = setup.options
    return EngineConfig(
        build=setup.build,
        lanes=lanes,
        warmup=o.warmup,
        duration_s=o.duration_s,
        max_requests=max_requests,
        time_scale=o.time_scale,
        max_think_s=o.max_think_s,
        timeout_s=o.timeout_s,
        salt=o.salt,
        recycle=o.duration_s is not None or o.max_requests is not None,
        nonce=f"{setup.nonce}{o.shard[0]:x}{worker:x}-",
        id_prefix=f"{o.shard[0]}.{worker}.",
    )


async def start_scraper(setup: RunSetup, client: httpx.AsyncClient) -> Any:
    if not setup.metrics_url:
        return None
    from agentx.metrics.prometheus import MetricsScraper

    scraper = MetricsScraper(setup.metrics_url, client)
    await scraper.start()
    return scraper


async def _run_here(setup: RunSetup, plan: ReplayPlan, tmp: Path) -> Collected:
    o = setup.options
    log = SentLog(tmp / "sent-0.log")
    async with make_http_client(
        setup.root_url,
        timeout_s=o.timeout_s,
        max_connections=setup.max_connections,
        headers=setup.headers,
    ) as client:
        engine = Engine(
            plan.sessions,
            engine_config(setup, tuple(range(o.concurrency)), o.max_requests, 0),
            client,
            log,
        )
        scraper = await start_scraper(setup, client)
        restore = _install_sigint(engine.abort)
        progress = asyncio.create_task(_progress(engine, o)) if o.progress else None
        try:
            result = await engine.run()
        finally:
            restore()
            if progress is not None:
                progress.cancel()
            log.close()
        server_metrics = await scraper.stop() if scraper is not None else None
    return collect([result], [log.path], server_metrics, [])


def _install_sigint(abort: Any) -> Any:
    """First Ctrl-C: stop and keep what was measured. Second: the default (KeyboardInterrupt)."""
    loop = asyncio.get_running_loop()
    if sys.platform == "win32":
        return lambda: None

    def on_sigint() -> None:
        print(
            "agentx: interrupted; writing partial results (Ctrl-C again to abort)", file=sys.stderr
        )
        abort()
        loop.remove_signal_handler(signal.SIGINT)

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (RuntimeError, ValueError):  # not the main thread
        return lambda: None

    def restore() -> None:
        loop.remove_signal_handler(signal.SIGINT)

    return restore


async def _progress(engine: Engine, options: ReplayOptions) -> None:
    cpu0 = time.thread_time()
    with ProgressView(options.concurrency) as view:
        while True:
            view.update(Snapshot.of(engine.counters, time.thread_time() - cpu0))
            await asyncio.sleep(PROGRESS_INTERVAL_S)
