"""``--workers N``: the lanes of one run spread over N client processes on this machine.

Worker ``w`` runs lanes ``w, w+N, ...`` over sessions ``w, w+N, ...`` of the plan (its own
event loop, HTTP client and sent-body log), with an equal share of ``--max-requests``. All
workers load and plan the trace, report ready, and start together on the parent's signal; the
parent scrapes the server's metrics, draws the progress from the workers' snapshots, and merges
their rows (by send time: ``perf_counter`` is one clock for every process of a machine) and
sent-body logs, so the theoretical hit rate covers the requests of all workers in send order.

The same split across machines is ``--shard I/N`` (sessions ``i % N == I``), which fits a
Kubernetes Indexed Job or a SLURM array: each member writes its own results directory.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import pickle
import queue
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

from agentx.replay.client import make_http_client
from agentx.replay.lanes import Engine, EngineResult
from agentx.replay.plan import ReplayPlan, build_plan, load_exchanges
from agentx.replay.progress import ProgressView, Snapshot
from agentx.replay.theory import SentLog

READY_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    setup: Any  # agentx.replay.run.RunSetup (picklable)
    worker: int
    workers: int
    tmp: Path


def _share(total: int | None, worker: int, workers: int) -> int | None:
    if total is None:
        return None
    return total // workers + (1 if worker < total % workers else 0)


def worker_main(spec: WorkerSpec, events: Any, go: MpEvent) -> None:
    """Entry point of one worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until the loop installs its own handler
    try:
        o = spec.setup.options
        plan = build_plan(
            load_exchanges(o.trace), sessions=o.sessions, seed=o.seed, shard=o.shard, api_mode=o.api
        )
        events.put(("ready", spec.worker, None))
        go.wait()
        result = asyncio.run(_worker_run(spec, plan, events))
        path = spec.tmp / f"records-{spec.worker}.pickle"
        path.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        events.put(("done", spec.worker, str(path)))
    except BaseException as exc:  # reported to the parent, which fails the run with it
        events.put(("error", spec.worker, f"{type(exc).__name__}: {exc}"))


async def _worker_run(spec: WorkerSpec, plan: ReplayPlan, events: Any) -> EngineResult:
    from agentx.replay.run import engine_config

    setup = spec.setup
    o = setup.options
    lanes = tuple(range(spec.worker, o.concurrency, spec.workers))
    sessions = plan.sessions[spec.worker :: spec.workers]
    log = SentLog(spec.tmp / f"sent-{spec.worker}.log")
    config = engine_config(
        setup, lanes, _share(o.max_requests, spec.worker, spec.workers), spec.worker
    )
    async with make_http_client(
        setup.root_url,
        timeout_s=o.timeout_s,
        max_connections=setup.max_connections,
        headers=setup.headers,
    ) as client:
        engine = Engine(sessions, config, client, log)
        loop = asyncio.get_running_loop()
        if sys.platform != "win32":
            loop.add_signal_handler(signal.SIGINT, engine.abort)
        cpu0 = time.thread_time()

        async def report() -> None:
            while True:
                events.put(
                    (
                        "progress",
                        spec.worker,
                        Snapshot.of(engine.counters, time.thread_time() - cpu0),
                    )
                )
                await asyncio.sleep(0.5)

        reporter = asyncio.create_task(report())
        try:
            return await engine.run()
        finally:
            reporter.cancel()
            log.close()


def run_workers(setup: Any, plan: ReplayPlan, tmp: Path) -> Any:
    """Run ``setup.options.workers`` worker processes; returns the merged ``Collected``."""
    from agentx.errors import AgentxError
    from agentx.replay.finish import collect

    o = setup.options
    ctx = mp.get_context("spawn")
    events = ctx.Queue()
    go = ctx.Event()
    procs = [
        ctx.Process(
            target=worker_main,
            args=(WorkerSpec(setup, w, o.workers, tmp), events, go),
            name=f"agentx-replay-worker-{w}",
            daemon=True,
        )
        for w in range(o.workers)
    ]
    for p in procs:
        p.start()
    try:
        return asyncio.run(_supervise(setup, procs, events, go, tmp, collect))
    except AgentxError:
        raise
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()


async def _supervise(
    setup: Any, procs: list[Any], events: Any, go: MpEvent, tmp: Path, collect: Any
) -> Any:
    from agentx.errors import AgentxError
    from agentx.replay.run import start_scraper

    o = setup.options
    n = len(procs)

    async def next_event(timeout: float) -> tuple[str, int, Any] | None:
        try:
            event: tuple[str, int, Any] = await asyncio.to_thread(events.get, True, timeout)
            return event
        except queue.Empty:
            return None

    ready = 0
    deadline = time.monotonic() + READY_TIMEOUT_S
    while ready < n:
        ev = await next_event(1.0)
        if ev is None:
            if time.monotonic() > deadline or not all(p.is_alive() for p in procs):
                raise AgentxError("a replay worker did not start")
            continue
        if ev[0] == "error":
            raise AgentxError(f"replay worker {ev[1]} failed: {ev[2]}")
        ready += ev[0] == "ready"

    loop = asyncio.get_running_loop()
    interrupted = False

    def on_sigint() -> None:  # the workers got the same SIGINT and stop themselves
        nonlocal interrupted
        interrupted = True
        print("agentx: interrupted; workers are writing partial results", file=sys.stderr)

    if sys.platform != "win32":
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    async with make_http_client(
        setup.root_url, timeout_s=o.timeout_s, max_connections=4, headers=setup.headers
    ) as client:
        scraper = await start_scraper(setup, client)
        go.set()
        snaps: dict[int, Snapshot] = {}
        done: dict[int, str] = {}
        view = ProgressView(o.concurrency) if o.progress else None
        if view is not None:
            view.__enter__()
        try:
            while len(done) < n:
                ev = await next_event(0.5)
                if ev is None:
                    if any(not p.is_alive() and w not in done for w, p in enumerate(procs)):
                        await asyncio.sleep(0.5)  # its last message may still be in the pipe
                        if events.empty():
                            raise AgentxError("a replay worker died")
                    continue
                kind, w, payload = ev
                if kind == "progress":
                    snaps[w] = payload
                    if view is not None:
                        view.update(sum(snaps.values(), Snapshot()))
                elif kind == "done":
                    done[w] = payload
                elif kind == "error":
                    raise AgentxError(f"replay worker {w} failed: {payload}")
        finally:
            if view is not None:
                view.__exit__(None, None, None)
            if sys.platform != "win32":
                loop.remove_signal_handler(signal.SIGINT)
        server_metrics = await scraper.stop() if scraper is not None else None
    results = [pickle.loads(Path(done[w]).read_bytes()) for w in range(n)]
    collected = collect(results, [tmp / f"sent-{w}.log" for w in range(n)], server_metrics, [])
    collected.interrupted = collected.interrupted or interrupted
    return collected
