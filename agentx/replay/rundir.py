"""A run's spool, in its results directory while it runs: ``DIR/.agentx-run/``.

When the lanes start, the run writes its set-up there (``run.json``,
:class:`agentx.results.runstart.RunStart`: the options without any credential, what the probe
and the plan decided, the server's identity, the start on both clocks; the trace's fingerprint
is added when it is known, :mod:`agentx.replay.fingerprint_job`)
and every process spools its rows there as they finish (``rows-W.arrows``, within about a second:
:data:`agentx.store.rowspool.FLUSH_AFTER_S`). A run that ends, however it ends, turns them into
``summary.json`` and ``requests.parquet`` and removes the spool; a run killed on the way (SIGKILL,
the OOM killer, a preempted pod) leaves it, with its ``.agentx-writing`` lock free, for
``agentx recover DIR`` (:mod:`agentx.replay.recover`). The bodies sent (prompt text) stay in the
run's temporary directory, out of ``-o``: ``run.json`` names them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from agentx.core.errors import AgentxError
from agentx.core.outputs import RUN_SPOOL, write_atomic
from agentx.core.urls import redact_url
from agentx.metrics.cost import cost_options_json
from agentx.replay.autoworkers import WorkersChoice
from agentx.replay.cache_reset import CacheReset
from agentx.replay.setup import RunSetup
from agentx.results.runstart import RunStart
from agentx.workload.plan import ReplayPlan

RUN_START_FILE = "run.json"  # in the spool: the run's set-up


def spool_dir(out_dir: Path) -> Path:
    """The spool of the run writing ``out_dir``."""
    return out_dir / RUN_SPOOL


def rows_path(spool: Path, worker: int) -> Path:
    """The spool of process ``worker``'s rows."""
    return spool / f"rows-{worker}.arrows"


def row_spools(spool: Path, workers: int) -> list[Path]:
    """Every process's spool of rows, in process order."""
    return [rows_path(spool, w) for w in range(workers)]


def run_start(
    setup: RunSetup,
    plan: ReplayPlan,
    started_at: str,
    sent_logs: list[Path],
    *,
    cache_reset: CacheReset | None,
    workers_choice: WorkersChoice | None,
) -> RunStart:
    """The run's set-up as the finish (and a recovery) reads it."""
    o = setup.options
    perf_ns, wall_ns = time.perf_counter_ns(), time.time_ns()
    return RunStart(
        started_at=started_at,
        anchor_perf_ns=perf_ns,
        anchor_wall_ns=wall_ns,
        endpoint=redact_url(o.endpoint),
        model=setup.model,
        server_kind=setup.server.kind,
        server_identity=setup.server.identity(),
        kv_tokens=setup.server.kv_tokens,
        block_size=setup.block_size,
        lanes=setup.lanes,
        concurrency=o.schedule.concurrency,
        workers=o.n_workers,
        api=o.workload.api,
        window_s=o.schedule.duration_s,
        max_failed_ratio=o.max_failed_ratio,
        min_coverage=o.min_coverage,
        slo=o.slo,
        tokenizer=o.tokenizer,
        trace=str(o.trace),
        trace_fingerprint=None,  # hashed beside the lanes (agentx.replay.fingerprint_job)
        percentiles=o.percentiles,
        labels=o.labels,
        cost=cost_options_json(o.cost),
        config=_config(setup, plan, cache_reset, workers_choice),
        warnings=(*setup.warnings, *start_warnings(setup, cache_reset)),
        plan_warnings=plan_warnings(setup, plan),
        sent_logs=tuple(str(p) for p in sent_logs),
    )


def with_plan(start: RunStart, setup: RunSetup, plan: ReplayPlan) -> RunStart:
    """``start`` with the plan's counts as they are now: a lazy plan indexes sessions as the
    lanes take them, so a live run's end knows more than its start (a recovered run says what
    the start knew, with ``trace_sessions_indexed`` saying how much)."""
    return dataclasses.replace(
        start,
        config={**start.config, **_plan_counts(plan)},
        plan_warnings=plan_warnings(setup, plan),
    )


def write_spool(out_dir: Path, start: RunStart) -> Path:
    """Make the run's spool in ``out_dir`` (an older one, of a killed run the user chose to
    replace with ``--force``, goes) and write its set-up; the spool's path."""
    spool = spool_dir(out_dir)
    shutil.rmtree(spool, ignore_errors=True)
    try:
        spool.mkdir()
        data = orjson.dumps(start.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
        write_atomic(spool / RUN_START_FILE, data, force=True)
    except OSError as exc:
        raise AgentxError(f"cannot write results to {out_dir}: {exc.strerror or exc}") from None
    return spool


def read_start(spool: Path) -> RunStart | None:
    """The set-up a run wrote in its spool; ``None`` when it has none (killed before its lanes
    started). :class:`~agentx.core.errors.ShapeError` when it is not one."""
    try:
        data = (spool / RUN_START_FILE).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AgentxError(f"cannot read {spool / RUN_START_FILE}: {exc.strerror or exc}") from None
    try:
        return RunStart.from_json(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        raise AgentxError(f"{spool / RUN_START_FILE} is not JSON ({exc})") from None


def remove_spool(spool: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(spool)


def _config(
    setup: RunSetup,
    plan: ReplayPlan,
    cache_reset: CacheReset | None,
    workers_choice: WorkersChoice | None,
) -> dict[str, Any]:
    """``summary.config``: the options, and what the probe and the plan decided
    (``interrupted`` is known at the end)."""
    config = setup.options.config()
    config.update(
        model=setup.model,
        server_kind=setup.server.kind,
        ignore_eos=setup.build.ignore_eos,
        block_size=setup.block_size,
        lanes=setup.lanes,
        metrics_url=redact_url(setup.metrics_url) if setup.metrics_url else None,
        trace_sessions=len(plan.sessions),
        **_plan_counts(plan),
        interrupted=None,
        cache_reset=None if cache_reset is None else cache_reset.endpoint,
        workers_auto=None if workers_choice is None else workers_choice.config(),
    )
    return config


def _plan_counts(plan: ReplayPlan) -> dict[str, Any]:
    """What the plan counted over the sessions it has indexed."""
    return {
        "trace_sessions_indexed": plan.sessions.tally.indexed,  # < trace_sessions: partial
        "trace_requests": plan.requests,
        "skipped_rows": plan.skipped,
        "synthesized_rows": plan.synthesized,
    }


def plan_warnings(setup: RunSetup, plan: ReplayPlan) -> tuple[str, ...]:
    """What the plan found that the reader of the figures must know."""
    warnings = list(plan.warnings)
    if plan.synthesized and setup.options.workload.salt:
        warnings.append(
            f"the trace is hash-only ({plan.synthesized} requests in the sessions read): requests "
            "are sent as synthetic text (one user message each), and the salt at its start also "
            "keeps different sessions from sharing a prefix; --no-salt keeps the trace's sharing"
        )
    return tuple(warnings)


def start_warnings(setup: RunSetup, cache_reset: CacheReset | None) -> list[str]:
    """What the reader of the figures must know about how the run was set up."""
    o = setup.options
    warnings = []
    if o.scrape_metrics and o.metrics_url and setup.metrics_url is None:
        warnings.append(
            f"--metrics-url {redact_url(o.metrics_url)} did not answer with Prometheus text; "
            "no server metrics"
        )
    if cache_reset is not None and not cache_reset.ok:
        warnings.append(
            f"could not reset the server's prefix cache before the run ({cache_reset.message}): "
            "it may hold blocks from earlier traffic"
        )
    return warnings
