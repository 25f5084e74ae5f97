"""``run_replay(options) -> ReplayResult``: probe, replay, measure, write the results directory.

The flow: read and plan the trace (fails fast on bad input), probe the endpoint (fails fast when
it is unreachable), scrape its Prometheus page around the run, run the lanes (in this process,
or in ``--workers`` processes; each spools its rows to the temporary directory as they finish),
then, off the hot path, read the rows back, compute each request's theoretical hit against
exactly what was sent, build ``summary.json`` and write ``requests.parquet``, ``summary.json``
and ``report.html``. Ctrl-C or SIGTERM stops the run and still writes what was
measured (:mod:`agentx.replay.stop`); the temporary files go either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import stat
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from agentx.core.errors import UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: temporary directories are not cleaned
    fcntl = None  # type: ignore[assignment]
from agentx.core.outputs import claimed_results_dir, unique_dir
from agentx.metrics.slo import parse_slo
from agentx.prefixcache.tokenizer import is_default_tokenizer
from agentx.replay import loop as lanes_loop
from agentx.replay.autoworkers import resolve_workers
from agentx.replay.cache_reset import CacheReset, all_reset, reset_prefix_cache
from agentx.replay.estimate import schedule_line, think_floor_s
from agentx.replay.fingerprint_job import FingerprintJob, with_fingerprint
from agentx.replay.finish import Collected, ReplayResult, collect, finish_run
from agentx.replay.lanes import LaneDriver
from agentx.replay.open_loop import for_arrivals
from agentx.replay.options import ReplayOptions
from agentx.replay.progress import Goal, ProgressView, Snapshot, goal_of
from agentx.replay.rundir import (
    RUN_START_FILE,
    remove_spool,
    row_spools,
    rows_path,
    run_start,
    write_spool,
)
from agentx.replay.setup import (
    RunSetup,
    http_client,
    lane_config,
    lane_replicas,
    metrics_client,
    probe_setup,
    return_large_blocks,
    start_barrier,
    start_scraper,
    stream_client,
)
from agentx.replay.stop import StopSignals, stop_signals
from agentx.replay.theory import (
    SentLog,
    TheoryPass,
    remove_quietly,
    sent_log_path,
    theory_threads,
)
from agentx.replay.workers import run_workers
from agentx.store.rowspool import FLUSH_AFTER_S, RowSpool, spooled_rows
from agentx.workload.plan import ReplayPlan, build_plan
from agentx.workload.source import open_source

PROGRESS_INTERVAL_S = 0.5
TMP_PREFIX = "agentx-replay-"  # the run's temporary directory under $TMPDIR
TMP_LOCK = "lock"  # in it: locked while the run lives


def default_output_dir() -> Path:
    return Path("results") / datetime.now().strftime("replay-%Y%m%d-%H%M%S")


def run_replay(options: ReplayOptions) -> ReplayResult:
    """Run one replay. Raises ``AgentxError`` (bad trace, bad options, unreachable endpoint;
    :class:`~agentx.replay.stop.Interrupted` for a signal before the lanes started)."""
    return_large_blocks()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    if options.slo:
        parse_slo(options.slo)  # a bad spec fails before the run
    target = (
        options.output_dir if options.output_dir is not None else unique_dir(default_output_dir())
    )
    # the results directory is made, proven writable and locked before anything is sent
    with claimed_results_dir(target, force=options.force) as out_dir, stop_signals() as stop:
        plan = build_plan(
            open_source(options.trace, flat_chains=options.workload.read.split),
            sessions=options.workload.sessions,
            seed=options.workload.rng_seed,
            shard=options.shard,
            api_mode=options.workload.api,
            max_entries=options.workload.max_entries,
        )
        plan = for_arrivals(plan, options.request_rate)
        choice = None
        if options.workers == "auto":
            options, choice = stop.run(resolve_workers(options, plan))
        if options.n_workers > len(plan.sessions):
            raise UsageError(
                f"--workers {options.workers} exceeds the {len(plan.sessions)} sessions to replay"
            )
        setup = stop.run(probe_setup(options, plan))
        think_s = think_floor_s(plan, options, setup.lanes)
        if (line := schedule_line(think_s, options)) is not None:
            print(f"agentx: {line}", file=sys.stderr)
        cache_reset = stop.run(_reset_cache(setup)) if options.reset_cache else None
        stale = clean_stale_tmp(Path(tempfile.gettempdir()))
        if stale is not None:
            print(f"agentx: {stale}", file=sys.stderr)
        tmp, tmp_lock = make_run_tmp()
        logs = [sent_log_path(tmp, w) for w in range(options.n_workers)]
        early: TheoryPass | None = None
        spool: Path | None = None
        fingerprint: FingerprintJob | None = None
        written = False
        try:
            start = run_start(
                setup, plan, started_at, logs, cache_reset=cache_reset, workers_choice=choice
            )
            spool = write_spool(out_dir, start)
            # hashed beside the lanes: the first request does not wait for it
            fingerprint = FingerprintJob(options.trace, spool / RUN_START_FILE)
            early = _theory_pass(setup, logs, tmp)
            if options.n_workers == 1:
                collected = lanes_loop.run(_run_here(setup, plan, tmp, spool, stop, think_s))
            else:
                collected = run_workers(setup, plan, tmp, spool, stop)
            collected.interrupted = collected.interrupted or stop.signum is not None
            collected.theory = early
            start = with_fingerprint(start, fingerprint.result())
            result = finish_run(setup, plan, collected, start, out_dir)
            written = True
        finally:
            if early is not None:
                early.close()
            if fingerprint is not None:  # before the spool goes: it writes there
                fingerprint.close()
            if spool is not None:
                _end_spool(spool, options.n_workers, out_dir, written=written)
            os.close(tmp_lock)
            for p in tmp.glob("*"):
                remove_quietly(p)
            with contextlib.suppress(OSError):
                tmp.rmdir()
    return dataclasses.replace(result, stop_signal=stop.signum)


def make_run_tmp() -> tuple[Path, int]:
    """The run's temporary directory (sent bodies and rows: prompt text) and the descriptor of
    its lock, held for the run's life: the kernel drops it when the run dies, however it dies,
    so a later run knows the directory is a dead run's (:func:`clean_stale_tmp`)."""
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
    fd = os.open(tmp / TMP_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if fcntl is not None:
        with contextlib.suppress(OSError):  # no lock support: the directory is never cleaned
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return tmp, fd


def clean_stale_tmp(root: Path) -> str | None:
    """Remove the temporary directories (of this user, under ``root``) of replays that died
    (SIGKILL, the OOM killer): those whose lock is free. One without a lock file (being made,
    or an older agentx's) is left alone. What was removed (which, how big), or ``None``."""
    if fcntl is None:
        return None
    removed: list[tuple[str, int]] = []
    for d in sorted(root.glob(f"{TMP_PREFIX}*")):
        size = remove_dead_tmp(d)
        if size is not None:
            removed.append((d.name, size))
    if not removed:
        return None
    n = len(removed)
    names = ", ".join(name for name, _ in removed[:5]) + (", ..." if n > 5 else "")
    return (
        f"removed {n} temporary director{'y' if n == 1 else 'ies'} of replays that died "
        f"({sum(size for _, size in removed) / 1e6:.1f} MB, prompt text) from {root}: {names}"
    )


def remove_dead_tmp(d: Path) -> int | None:
    """Remove ``d`` if it is the temporary directory of a replay that died (its lock free): the
    bytes it held, or ``None`` (a live run's, an older agentx's, not a run's, or not this
    user's)."""
    if fcntl is None:
        return None
    try:
        st = d.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return None
        fd = os.open(d / TMP_LOCK, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live run's
            return None
        size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
        shutil.rmtree(d, ignore_errors=True)
        return size
    finally:
        os.close(fd)


def _end_spool(spool: Path, workers: int, out_dir: Path, *, written: bool) -> None:
    """The run's spool goes once its results are written, or when it holds no row; otherwise
    (the finish failed) it stays for ``agentx recover``, which the run names."""
    rows = spooled_rows(row_spools(spool, workers))
    if written or rows == 0:
        remove_spool(spool)
        return
    print(
        f"agentx: the rows of {rows} finished requests are kept in {spool}: agentx recover "
        f"{out_dir} makes them a results directory",
        file=sys.stderr,
    )


def _theory_pass(setup: RunSetup, logs: list[Path], tmp: Path) -> TheoryPass | None:
    """The theoretical pass beside the lanes, for agentx's own tokens (another tokenizer, a
    server's or a chat template's, counts after the run)."""
    if not is_default_tokenizer(setup.options.tokenizer):
        return None
    lanes = setup.options.schedule.concurrency
    return TheoryPass(logs, tmp / "theory.pickle", setup.block_size, theory_threads(lanes))


async def _reset_cache(setup: RunSetup) -> CacheReset:
    """The server's prefix cache reset; over several replicas, every replica's."""
    roots = [(r, r.root_url) for r in setup.replicas if r.root_url is not None]
    if not roots:
        async with http_client(setup) as client:
            return await reset_prefix_cache(client, setup.root_url, setup.server.kind)
    resets = []
    for replica, root in roots:
        async with http_client(setup, replica=replica) as client:
            resets.append(await reset_prefix_cache(client, root, setup.server.kind))
    return all_reset(resets)


async def _run_here(
    setup: RunSetup,
    plan: ReplayPlan,
    tmp: Path,
    spool: Path,
    stop: StopSignals,
    think_s: float | None,
) -> Collected:
    o = setup.options
    started_late = await start_barrier(o)
    log = SentLog(sent_log_path(tmp, 0))
    rows = RowSpool(rows_path(spool, 0))
    async with (
        metrics_client(o, setup.metrics_url) as client,
        stream_client(setup) as lanes_client,
        lane_replicas(setup, 0) as replicas,
    ):
        scraper = await start_scraper(setup, client)
        driver = LaneDriver(
            plan.sessions,
            plan.source,
            lane_config(setup, tuple(range(setup.lanes)), o.schedule.max_requests, 0),
            lanes_client,
            log,
            rows,
            on_boundary=scraper.begin_window if scraper is not None else None,
            replicas=replicas,
        )
        goal = goal_of(o, plan.known_requests, think_s)
        progress = asyncio.create_task(_progress(driver, setup.lanes, goal)) if o.progress else None
        flusher = asyncio.create_task(_flush_rows(rows))
        try:
            with stop.running(driver.abort):
                result = await driver.run()
        finally:
            flusher.cancel()
            if progress is not None:
                progress.cancel()
            log.close()
            rows.close()
        server_metrics = await scraper.stop() if scraper is not None else None
    warnings = [started_late] if started_late else []
    return collect([result], [log.path], [rows.path], server_metrics, warnings)


async def _flush_rows(rows: RowSpool) -> None:
    """A killed run's rows are on disk within about a second, however few it finished."""
    while True:
        await asyncio.sleep(FLUSH_AFTER_S / 2)
        rows.flush_due()


async def _progress(driver: LaneDriver, lanes: int, goal: Goal) -> None:
    cpu0 = time.thread_time()
    with ProgressView(lanes, goal=goal) as view:
        while True:
            view.update(Snapshot.of(driver.counters, time.thread_time() - cpu0))
            await asyncio.sleep(PROGRESS_INTERVAL_S)
