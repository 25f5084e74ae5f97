"""``agentx recover RUN_DIR``: the results directory of a replay that was killed.

A replay killed on its way (SIGKILL, the OOM killer, a preempted pod) leaves its spool in its
results directory (``DIR/.agentx-run/``, :mod:`agentx.replay.rundir`): its set-up and the rows
that reached disk. Recovery builds ``summary.json``, ``requests.parquet`` and ``report.html``
from them with the finish of a live run (:func:`agentx.replay.finish.finish_rows`), marked
partial as a stopped run is (``config.interrupted: true``, a gate's reason), with the
theoretical hit rate when the bodies sent are still in the run's temporary directory, and
removes the spool. What it cannot know (the client's CPU, the sessions completed, the server's
counters, the bottleneck) is unknown (``null``), never 0.
"""

from __future__ import annotations

from pathlib import Path

from agentx.core.errors import AgentxError, UsageError
from agentx.core.outputs import (
    RUN_SPOOL,
    WRITING_FILE,
    claimed_results_dir,
    results_at,
    writer_of,
)
from agentx.prefixcache.tokenizer import is_default_tokenizer, resolve_tokenizer
from agentx.replay.fingerprint_job import (
    fingerprint_known,
    recovered_fingerprint,
    with_fingerprint,
)
from agentx.replay.finish import Collected, ReplayResult, finish_rows
from agentx.replay.run import remove_dead_tmp
from agentx.replay.rundir import read_start, remove_spool, row_spools, spool_dir
from agentx.store.rowspool import spooled_span

KILLED = "the run was killed before it ended: recovered from its spool by agentx recover, partial"


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a replay's results directory (its spool, its writer's marker, or
    results): what ``agentx recover`` recovers as a run, not as a trace."""
    return path.is_dir() and (
        spool_dir(path).is_dir() or (path / WRITING_FILE).exists() or results_at(path) is not None
    )


def recover_run(path: Path) -> ReplayResult:
    """Turn the spool a killed replay left in ``path`` into its results directory. Refused
    (:class:`UsageError`, exit 2) while the run writing it lives; :class:`AgentxError` when there
    is nothing to recover."""
    spool = spool_dir(path)
    if not spool.is_dir():
        raise UsageError(f"{path}: no replay to recover (no {RUN_SPOOL} spool)")
    pid = writer_of(path)
    if pid is not None:
        raise UsageError(
            f"{path} is being written by a live agentx run (pid {pid}): it writes its own "
            "results when it ends; recover it only once that process is gone"
        )
    with claimed_results_dir(path, force=True) as out_dir:
        start = read_start(spool)
        if start is None:
            remove_spool(spool)
            raise AgentxError(
                f"{path}: the run was killed before its lanes started: nothing to recover "
                f"(its {RUN_SPOOL} spool is removed)"
            )
        spools = row_spools(spool, start.workers)
        span = spooled_span(spools)
        if span is None:
            remove_spool(spool)
            raise AgentxError(
                f"{path}: no request finished before the run was killed: nothing to recover "
                f"(its {RUN_SPOOL} spool is removed)"
            )
        if not fingerprint_known(start):  # killed while it was being hashed
            start = with_fingerprint(start, recovered_fingerprint(start))
        logs = [Path(p) for p in start.sent_logs if Path(p).is_file()]
        warnings = [f"{KILLED}: the client's CPU, the sessions, the server's counters are unknown"]
        tokenizer = None
        if not is_default_tokenizer(start.tokenizer):
            warnings.append(
                f"the theoretical hit rate is unknown: counted in --tokenizer {start.tokenizer}'s "
                "tokens, which a recovery does not ask for"
            )
        elif len(logs) < len(start.sent_logs) or not logs:
            warnings.append(
                "the theoretical hit rate is unknown: the bodies the run sent (its temporary "
                "directory) are gone"
            )
        else:
            tokenizer = resolve_tokenizer(None)
        collected = Collected.recovered(
            spools, logs if tokenizer is not None else [], span, warnings, KILLED
        )
        result = finish_rows(start, collected, out_dir, tokenizer, command="recover")
        remove_spool(spool)
    for d in {Path(p).parent for p in start.sent_logs}:  # the dead run's prompt text
        remove_dead_tmp(d)
    return result
