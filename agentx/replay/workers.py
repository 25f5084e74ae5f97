"""``--workers N``: the lanes of one run spread over N client processes on this machine.

Worker ``w`` runs lanes ``w, w+N, ...`` over sessions ``w, w+N, ...`` of the plan (its own
event loop, HTTP client, sent-body log and spool of rows: :func:`rows_path`), with an equal share
of ``--max-requests``. All workers load and plan the trace, report ready, and start together on
the parent's signal; the parent scrapes the server's metrics, draws the progress from the
workers' snapshots, and merges their rows (by send time: ``perf_counter`` is one clock for every
process of a machine) and sent-body logs, so the theoretical hit rate covers the requests of all
workers in send order.
Workers also meet at the end of the warm-up: each reports it and waits until the parent has
scraped the server's counters at the start of the measured window.

The same split across machines is ``--shard I/N`` (sessions ``i % N == I``), which fits a
Kubernetes Indexed Job or a SLURM array: each member writes its own results directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import pickle
import queue
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path

from agentx.core.errors import AgentxError
from agentx.core.procs import die_with_parent, end_process, name_process
from agentx.metrics.prometheus import MetricsScraper
from agentx.replay import loop as lanes_loop
from agentx.replay.finish import Collected, collect
from agentx.replay.lanes import LaneDriver, LaneResult
from agentx.replay.open_loop import for_arrivals
from agentx.replay.progress import ProgressView, Snapshot, goal_of
from agentx.replay.rundir import row_spools, rows_path
from agentx.replay.setup import (
    RunSetup,
    lane_config,
    lane_replicas,
    metrics_client,
    return_large_blocks,
    start_barrier,
    start_scraper,
    stream_client,
)
from agentx.replay.stop import SIGNALS as STOP_SIGNALS
from agentx.replay.stop import StopSignals
from agentx.replay.theory import SentLog, sent_log_path
from agentx.store.rowspool import RowSpool
from agentx.workload.plan import ReplayPlan, build_plan
from agentx.workload.source import open_source

WORKER_PROCESS_NAME = "agentx-worker"  # each worker's name in /proc/PID/comm
READY_TIMEOUT_S = 600.0
# A running worker reports its progress every PROGRESS_INTERVAL_S: one silent this long (stopped,
# wedged) is killed and the run ends with the rows the workers spooled.
SILENT_S = 20.0
# ... or, once the --duration window has ended (nothing new is sent; a draining worker still
# reports its progress), silent this long: a stopped worker ends the run at the window's end.
AFTER_WINDOW_SILENT_S = 5.0
# Once the run is stopping (a signal, a worker lost), how long the others get to send Done.
STOP_GRACE_S = 20.0
HEALTH_CHECK_S = 0.5  # how often the parent looks for a worker that died or went silent
DEAD_GRACE_S = 1.0  # a dead worker's last messages are read within this
JOIN_S = 5.0  # a worker that has sent Done (or was killed) exits within this
BOUNDARY_POLL_S = 0.25  # a worker waiting at the end of its warm-up checks for a stop this often
PROGRESS_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    setup: RunSetup  # picklable: sent to the worker process
    worker: int
    workers: int
    tmp: Path  # the run's temporary directory: the bodies it sends
    spool: Path  # the run's spool in its results directory: the rows
    parent_pid: int  # the replay's process: the worker dies with it


# What a worker tells the parent, in order: Ready, then Progress..., then Done (or Failed).
@dataclass(frozen=True, slots=True)
class Ready:
    worker: int


@dataclass(frozen=True, slots=True)
class WarmedUp:
    worker: int


@dataclass(frozen=True, slots=True)
class Progress:
    worker: int
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class Done:
    worker: int
    result_path: str  # the pickled LaneResult (its rows are in the worker's spool)


@dataclass(frozen=True, slots=True)
class Failed:
    worker: int
    message: str


WorkerEvent = Ready | WarmedUp | Progress | Done | Failed
Events = Queue[WorkerEvent]


def _share(total: int | None, worker: int, workers: int) -> int | None:
    if total is None:
        return None
    return total // workers + (1 if worker < total % workers else 0)


def worker_main(
    spec: WorkerSpec, events: Events, go: MpEvent, stop: MpEvent, measure: MpEvent
) -> None:
    """Entry point of one worker process. SIGINT and SIGTERM stop its lanes (the parent sends
    SIGINT and sets ``stop`` when it is stopped; a terminal or a job scheduler may signal the
    worker directly)."""
    # a SIGKILLed parent runs no clean-up: its workers must not go on loading the server
    die_with_parent(spec.parent_pid)
    name_process(WORKER_PROCESS_NAME)  # apart from the run's helpers, before any request
    for sig in STOP_SIGNALS:  # the parent decides until the lanes run
        signal.signal(sig, signal.SIG_IGN)
    return_large_blocks()
    try:
        o = spec.setup.options
        plan = build_plan(
            open_source(o.trace, flat_chains=o.workload.read.split),
            sessions=o.workload.sessions,
            seed=o.workload.rng_seed,
            shard=o.shard,
            api_mode=o.workload.api,
            max_entries=o.workload.max_entries,
        )
        plan = for_arrivals(plan, o.request_rate)
        events.put(Ready(spec.worker))
        go.wait()
        if stop.is_set():  # stopped before the start
            return
        result = lanes_loop.run(_worker_run(spec, plan, events, stop, measure))
        path = spec.tmp / f"result-{spec.worker}.pickle"
        path.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        events.put(Done(spec.worker, str(path)))
    except BaseException as exc:  # reported to the parent, which fails the run with it
        events.put(Failed(spec.worker, f"{type(exc).__name__}: {exc}"))


async def _worker_run(
    spec: WorkerSpec, plan: ReplayPlan, events: Events, stop: MpEvent, measure: MpEvent
) -> LaneResult:
    setup = spec.setup
    o = setup.options
    lanes = tuple(range(spec.worker, setup.lanes, spec.workers))
    sessions = plan.sessions.every(spec.worker, spec.workers)
    log = SentLog(sent_log_path(spec.tmp, spec.worker))
    rows = RowSpool(rows_path(spec.spool, spec.worker))
    config = lane_config(
        setup, lanes, _share(o.schedule.max_requests, spec.worker, spec.workers), spec.worker
    )

    async def warmed_up() -> None:  # wait for the parent's scrape at the window's start
        events.put(WarmedUp(spec.worker))
        # ... or for a stop: the parent's, or a signal sent to this worker alone
        while not await asyncio.to_thread(measure.wait, BOUNDARY_POLL_S):
            if stop.is_set() or driver.aborted:
                return

    async with stream_client(setup) as client, lane_replicas(setup, spec.worker) as replicas:
        driver = LaneDriver(
            sessions,
            plan.source,
            config,
            client,
            log,
            rows,
            on_boundary=warmed_up,
            replicas=replicas,
        )
        loop = asyncio.get_running_loop()
        if sys.platform != "win32":
            for sig in STOP_SIGNALS:
                loop.add_signal_handler(sig, driver.abort)
        if stop.is_set():  # the parent's SIGINT came before the handlers: it set stop first
            driver.abort()
        cpu0 = time.thread_time()

        async def report() -> None:
            while True:
                snap = Snapshot.of(driver.counters, time.thread_time() - cpu0)
                events.put(Progress(spec.worker, snap))
                rows.flush_due()  # a killed worker's rows are on disk within about a second
                await asyncio.sleep(PROGRESS_INTERVAL_S)

        reporter = asyncio.create_task(report())
        try:
            return await driver.run()
        finally:
            reporter.cancel()
            log.close()
            rows.close()


def run_workers(
    setup: RunSetup, plan: ReplayPlan, tmp: Path, spool: Path, stop: StopSignals
) -> Collected:
    """Run ``setup.options.workers`` worker processes; returns what they measured, merged."""
    o = setup.options
    ctx = mp.get_context("spawn")
    events: Events = ctx.Queue()
    go = ctx.Event()
    stop_all = ctx.Event()
    measure = ctx.Event()
    procs = [
        ctx.Process(
            target=worker_main,
            args=(
                WorkerSpec(setup, w, o.n_workers, tmp, spool, os.getpid()),
                events,
                go,
                stop_all,
                measure,
            ),
            name=f"agentx-replay-worker-{w}",
            daemon=True,
        )
        for w in range(o.n_workers)
    ]
    for p in procs:
        p.start()

    def stop_workers() -> None:
        stop_all.set()  # first: a worker that installs its handlers after the signal sees it
        measure.set()  # a worker waiting at the end of its warm-up goes on to see its SIGINT
        for p in procs:
            if p.pid is not None and p.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signal.SIGINT)

    try:
        return asyncio.run(
            _supervise(
                setup,
                procs,
                events,
                go,
                measure,
                tmp,
                spool,
                plan.known_requests,
                stop,
                stop_workers,
            )
        )
    finally:
        stop_all.set()  # a failure or an early signal: the workers waiting for "go" leave
        go.set()
        for p in procs:
            end_process(p, JOIN_S)
        events.close()
        events.join_thread()


async def _next_event(events: Events, timeout: float) -> WorkerEvent | None:
    try:
        return await asyncio.to_thread(events.get, True, timeout)
    except queue.Empty:
        return None


async def _wait_ready(procs: Sequence[BaseProcess], events: Events) -> None:
    ready = 0
    deadline = time.monotonic() + READY_TIMEOUT_S
    while ready < len(procs):
        ev = await _next_event(events, 1.0)
        if ev is None:
            if time.monotonic() > deadline or not all(p.is_alive() for p in procs):
                raise AgentxError("a replay worker did not start")
            continue
        if isinstance(ev, Failed):
            raise AgentxError(f"replay worker {ev.worker} failed: {ev.message}")
        ready += isinstance(ev, Ready)


async def _supervise(
    setup: RunSetup,
    procs: Sequence[BaseProcess],
    events: Events,
    go: MpEvent,
    measure: MpEvent,
    tmp: Path,
    spool: Path,
    plan_requests: int | None,
    stop: StopSignals,
    stop_workers: Callable[[], None],
) -> Collected:
    o = setup.options
    n = len(procs)
    await _wait_ready(procs, events)
    started_late = await start_barrier(o)
    async with metrics_client(o, setup.metrics_url) as client:
        scraper = await start_scraper(setup, client)
        go.set()
        snaps: dict[int, Snapshot] = {}
        done: dict[int, str] = {}
        lost: dict[int, str] = {}
        view = ProgressView(setup.lanes, goal=goal_of(o, plan_requests)) if o.progress else None
        if view is not None:
            view.__enter__()
        try:
            with stop.running(stop_workers):
                await _collect(
                    procs,
                    events,
                    view,
                    snaps,
                    done,
                    lost,
                    measure,
                    scraper,
                    stop,
                    stop_workers,
                    o.schedule.duration_s,
                )
        finally:
            if view is not None:
                view.__exit__(None, None, None)
        server_metrics = await scraper.stop() if scraper is not None else None
    if not done:
        raise AgentxError("; ".join(lost[w] for w in sorted(lost)))
    results: list[LaneResult] = [pickle.loads(Path(done[w]).read_bytes()) for w in sorted(done)]
    collected = collect(
        results,
        [sent_log_path(tmp, w) for w in range(n)],  # a lost worker's too: up to its last
        row_spools(spool, n),
        server_metrics,
        [started_late] if started_late else [],
    )
    collected.interrupted = collected.interrupted or stop.signum is not None or bool(lost)
    if lost:  # partial results, and a failed run
        why = "; ".join(lost[w] for w in sorted(lost))
        collected.failure = f"{why}: the rows it spooled are kept, the run is partial"
    return collected


async def _collect(
    procs: Sequence[BaseProcess],
    events: Events,
    view: ProgressView | None,
    snaps: dict[int, Snapshot],
    done: dict[int, str],
    lost: dict[int, str],
    measure: MpEvent,
    scraper: MetricsScraper | None,
    stop: StopSignals,
    stop_workers: Callable[[], None],
    window_s: float | None,
) -> None:
    """Progress and results of the workers, until each has sent its Done or is ``lost``. Once
    every worker has ended its warm-up (or finished), the server's counters are scraped and
    ``measure`` lets them start the measured window. Every wait is bounded: a worker that died
    is lost at once, one silent for :data:`SILENT_S` (stopped, wedged; after the ``window_s``
    window: :data:`AFTER_WINDOW_SILENT_S`) or still running
    :data:`STOP_GRACE_S` after the run began stopping is killed and lost; losing one stops the
    others, so the run ends with the rows every worker spooled."""
    n = len(procs)
    warmed: set[int] = set()
    heard = dict.fromkeys(range(n), time.monotonic())
    stopping_since: float | None = None
    checked = time.monotonic()
    dead_since: dict[int, float] = {}
    window_ends: float | None = None  # when the measured window ends (monotonic)

    async def open_window() -> None:
        nonlocal window_ends
        await _open_window(measure, scraper)
        if window_s is not None:
            window_ends = time.monotonic() + window_s

    def lose(w: int, why: str) -> None:
        nonlocal stopping_since
        lost[w] = f"replay worker {w} {why}"
        warmed.add(w)  # the others' measured window does not wait for it
        if stopping_since is None:
            stopping_since = time.monotonic()
            stop_workers()

    while len(done) + len(lost) < n:
        if stopping_since is None and stop.signum is not None:
            stopping_since = time.monotonic()
        ev = await _next_event(events, HEALTH_CHECK_S)
        # the workers are checked on time, not only when no event comes: a survivor's progress
        # arrives more often than the timeout above
        if time.monotonic() - checked >= HEALTH_CHECK_S:
            checked = now = time.monotonic()
            for w, p in enumerate(procs):
                if w in done or w in lost:
                    continue
                if not p.is_alive():
                    # its last message may still be in the pipe: lost once it was read
                    dead_since.setdefault(w, now)
                    if now - dead_since[w] > DEAD_GRACE_S:
                        lose(w, f"died ({_death(p.exitcode)})")
                elif now - heard[w] > SILENT_S:
                    _kill(p)
                    lose(w, f"did not answer for {SILENT_S:.0f} s and was killed")
                elif (
                    window_ends is not None
                    and now > window_ends
                    and now - heard[w] > AFTER_WINDOW_SILENT_S
                ):
                    _kill(p)
                    lose(
                        w,
                        f"did not answer for {now - heard[w]:.0f} s after the --duration window "
                        "ended and was killed",
                    )
                elif stopping_since is not None and now - stopping_since > STOP_GRACE_S:
                    _kill(p)
                    lose(w, f"did not stop within {STOP_GRACE_S:.0f} s and was killed")
            if len(warmed) == n and not measure.is_set():  # the one lost was the last
                await open_window()
        if ev is None:
            continue
        heard[ev.worker] = time.monotonic()
        if ev.worker in lost:
            continue
        if isinstance(ev, Progress):
            snaps[ev.worker] = ev.snapshot
            if view is not None:
                view.update(sum(snaps.values(), Snapshot()))
        elif isinstance(ev, WarmedUp | Done):
            warmed.add(ev.worker)
            if isinstance(ev, Done):
                done[ev.worker] = ev.result_path
            if len(warmed) == n and not measure.is_set():
                await open_window()
        elif isinstance(ev, Failed):
            raise AgentxError(f"replay worker {ev.worker} failed: {ev.message}")


async def _open_window(measure: MpEvent, scraper: MetricsScraper | None) -> None:
    """Scrape the server's counters at the measured window's start, then let the workers in."""
    if scraper is not None:
        await scraper.begin_window()
    measure.set()


def _kill(p: BaseProcess) -> None:
    """SIGKILL: a stopped process ignores everything else until it is continued."""
    with contextlib.suppress(OSError):
        p.kill()
    p.join(timeout=JOIN_S)


def _death(exitcode: int | None) -> str:
    """How a process ended, in words: ``killed by SIGKILL``, ``exit code 3``."""
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit code {exitcode}"
