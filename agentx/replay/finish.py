"""After the lanes: merge what every process measured (its rows read back from its spool, in
send order), add the theoretical hits, judge whether the client kept up, build
``summary.json`` (the figures, then what the run itself says: its gates, bottleneck, lanes and
warnings) and write the results directory."""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentx.apis.translate import to_chat
from agentx.apis.usage_counts import MAX_TOKENS
from agentx.core.outputs import SUMMARY_FILE
from agentx.core.progress import Progress, progress_for
from agentx.core.record import ERR_BAD_USAGE, RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics.arrivals import arrival_summary, arrival_warnings
from agentx.metrics.cost import cost_options_of
from agentx.metrics.errors import failed_requests_line
from agentx.metrics.fit import kv_fit_warning
from agentx.metrics.prometheus import ServerMetrics
from agentx.metrics.replicas import BEHIND_A_ROUTER, Replicas
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.prefixcache.theory import TheoryRow
from agentx.prefixcache.tokenizer import Tokenizer, resolve_tokenizer
from agentx.replay import gates
from agentx.replay.bottleneck import Tick, judge
from agentx.replay.bottleneck import warning as bottleneck_warning
from agentx.replay.lanes import LaneResult
from agentx.replay.rundir import with_plan
from agentx.replay.setup import RunSetup
from agentx.replay.theory import TheoryPass, merged, theoretical, theory_threads
from agentx.report.results_dir import write_results
from agentx.results.runstart import RunStart
from agentx.results.summary import Summary
from agentx.results.summary.identity import ClientHost
from agentx.results.summary.run import Bottleneck, LaneSchedule, LaneStartRow
from agentx.schedule.arrivals import ArrivalLog
from agentx.store.rowspool import read_spools
from agentx.workload.plan import ReplayPlan, Tally


@dataclass(frozen=True, slots=True)
class ReplayResult:
    summary: Summary
    records: list[RequestRecord]
    output_dir: Path
    warnings: tuple[str, ...] = ()
    interrupted: bool = False
    failure: str | None = None  # a failed gate or warm-up request: the run failed (exit 1)
    stop_signal: int | None = None  # SIGINT/SIGTERM that stopped it (exit 128 + it)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code before SLO checks: 128 + the stopping signal, 130 when a worker
        was interrupted on its own (unless the run failed: a lost worker's run ends in its
        failure, exit 1), else 0."""
        if self.stop_signal is not None:
            return 128 + self.stop_signal
        return 130 if self.interrupted and self.failure is None else 0


@dataclass(slots=True)
class Collected:
    """The lane drivers' results of every process, merged."""

    row_spools: list[Path]  # each process's rows (agentx.store.rowspool), in process order
    sent_logs: list[Path]
    started_ns: int
    ended_ns: int
    cpu_s: float | None  # None: unknown (a recovered run)
    cpu_percent_max: float | None  # the busiest process, % of one core
    sessions_started: int | None
    sessions_completed: int | None
    live_fallbacks: int
    interrupted: bool
    server_metrics: ServerMetrics | None = None
    warnings: list[str] = field(default_factory=list)
    profiling_started_ns: int | None = None  # the measured window's start (after warm-up)
    schedule: LaneSchedule | None = None  # lane starts, idle-cap jumps
    failure: str | None = None
    arrival_logs: list[ArrivalLog] = field(default_factory=list)  # open loop, one per process
    ticks: list[Tick] = field(default_factory=list)  # every process's loop monitor
    tallies: list[Tally] = field(default_factory=list)  # what each process indexed (lazy plans)
    theory: TheoryPass | None = None  # the theoretical pass beside the lanes (default tokens)

    @classmethod
    def recovered(
        cls,
        row_spools: list[Path],
        sent_logs: list[Path],
        span: tuple[int, int],
        warnings: Sequence[str],
        failure: str,
    ) -> Collected:
        """What a killed run's spool holds (``agentx recover``): its rows, the bodies it sent
        (none when they are not to be counted), the span of its rows on their clock; marked
        interrupted and failed. What only its live processes knew (their CPU, the sessions, the
        server's counters, the windows, the schedule) is unknown."""
        return cls(
            row_spools=row_spools,
            sent_logs=sent_logs,
            started_ns=span[0],
            ended_ns=span[1],
            cpu_s=None,
            cpu_percent_max=None,
            sessions_started=None,
            sessions_completed=None,
            live_fallbacks=0,  # counted by the lanes only: no warning about it
            interrupted=True,
            warnings=list(warnings),
            failure=failure,
        )


def collect(
    results: Sequence[LaneResult],
    logs: list[Path],
    spools: list[Path],
    server_metrics: ServerMetrics | None,
    warnings: list[str],
) -> Collected:
    started = min(res.started_ns for res in results)
    ended = max(res.ended_ns for res in results)
    windows = [res.profiling_started_ns for res in results if res.profiling_started_ns is not None]
    jumps: dict[str, float] = {}
    for res in results:
        for key, value in res.idle_jumps.items():
            jumps[key] = round(jumps.get(key, 0) + value, 3)
    lanes = sorted((ls for res in results for ls in res.lane_starts), key=lambda ls: ls.lane)
    return Collected(
        row_spools=spools,
        sent_logs=logs,
        started_ns=started,
        ended_ns=ended,
        cpu_s=sum(res.cpu_s for res in results),
        cpu_percent_max=max(
            100.0 * res.cpu_s / max((res.ended_ns - res.started_ns) / 1e9, 1e-9) for res in results
        ),
        sessions_started=sum(res.counters.sessions_started for res in results),
        sessions_completed=sum(res.counters.sessions_completed for res in results),
        live_fallbacks=sum(res.counters.live_fallbacks for res in results),
        interrupted=any(res.interrupted for res in results),
        server_metrics=server_metrics,
        warnings=[
            *warnings,
            *sorted({res.sent_log_error for res in results if res.sent_log_error}),
        ],
        profiling_started_ns=min(windows) if windows else None,
        schedule=LaneSchedule(
            lanes=tuple(
                LaneStartRow(
                    lane=ls.lane,
                    session=ls.tree_id,
                    t_star_s=round(ls.t_star_s, 3),
                    position=round(ls.position, 4),
                    primers=ls.primers,
                )
                for ls in lanes
            ),
            warmup_s=round((min(windows) - started) / 1e9, 3) if windows else None,
            idle_caps=jumps,
        ),
        failure=next((res.failure for res in results if res.failure), None),
        arrival_logs=[res.arrivals for res in results if res.arrivals is not None],
        ticks=[t for res in results for t in res.ticks],
        tallies=[res.tally for res in results if res.tally is not None],
    )


def _with_theory(
    c: Collected, block_size: int, tokenizer: Tokenizer, lanes: int, progress: Progress
) -> tuple[list[RequestRecord], list[TheoryRow]]:
    """The spooled rows, in send order, with their theoretical figures (in ``tokenizer``'s
    tokens), and the rows of ``theory.parquet``: the pass that ran beside the lanes, finished,
    or the whole pass now."""
    expected = c.theory.result(progress) if c.theory is not None else None
    if expected is None:
        logs = merged(c.sent_logs)
        expected = theoretical(
            logs, block_size, tokenizer, theory_threads(lanes), progress=progress
        )
    records = _read_rows(c, progress)  # read after the pass: its per-thread state is gone
    for i, r in enumerate(records):
        e = expected.get(r.request_id)
        if e is not None:
            records[i] = dataclasses.replace(
                r,
                expected_prompt_tokens=e.prompt_tokens,
                theoretical_hit_tokens=e.hit_tokens,
                replica_theoretical_hit_tokens=e.replica_hit_tokens,
            )
    return records, list(expected.values())


def finish_run(
    setup: RunSetup,
    plan: ReplayPlan,
    c: Collected,
    start: RunStart,
    out_dir: Path,
) -> ReplayResult:
    """The end of a live run: what the lanes measured, with the set-up written at the start."""
    o = setup.options
    tokenizer = resolve_tokenizer(
        o.tokenizer, server_url=setup.root_url, model=setup.model, to_chat=to_chat
    )
    tally = plan.sessions.tally
    if plan.sessions.lazy and not any(t is tally for t in c.tallies):  # indexed by workers
        for t in c.tallies:
            tally.merge(t)
    start = with_plan(start, setup, plan)
    return finish_rows(start, c, out_dir, tokenizer)


def finish_rows(
    start: RunStart,
    c: Collected,
    out_dir: Path,
    tokenizer: Tokenizer | None,
    *,
    command: str = "replay",
) -> ReplayResult:
    """Build ``summary.json`` from the spooled rows and the run's set-up and write the results
    directory: the one finish of a live run and of a recovered one (``agentx recover``).
    ``tokenizer`` ``None``: no theoretical figures (the bodies sent are not there to count).
    A long finish says on stderr what it is doing (:func:`agentx.core.progress.progress_for`:
    lines every few seconds off a terminal, ``--json`` included; stdout is left alone), named
    after the ``command`` finishing."""
    with progress_for(command) as progress:
        return _finish_rows(start, c, out_dir, tokenizer, progress)


def _read_rows(c: Collected, progress: Progress) -> list[RequestRecord]:
    progress.phase("reading the spooled rows", unit="rows")
    return read_spools(c.row_spools, progress)


def _finish_rows(
    start: RunStart, c: Collected, out_dir: Path, tokenizer: Tokenizer | None, progress: Progress
) -> ReplayResult:
    theory: list[TheoryRow] | None = None
    if tokenizer is None:
        records = _read_rows(c, progress)
    else:
        records, theory = _with_theory(c, start.block_size, tokenizer, start.concurrency, progress)
    progress.phase(f"building {SUMMARY_FILE} from {len(records):,} rows")
    verdict = (
        judge(records, c.cpu_percent_max, c.ticks, c.server_metrics)
        if c.cpu_percent_max is not None
        else None
    )
    config = {**start.config, "interrupted": c.interrupted}
    saturated = None if verdict is None else verdict.bottleneck == "client"
    figures = build_summary(
        _run_info(start, c, config, saturated=saturated),
        records,
        c.server_metrics,
        parse_slo(start.slo) if start.slo else [],
        start.block_size,
        extra_percentiles=start.percentiles,
        cost=cost_options_of(start.cost),
        replicas=run_replicas(start.config),
    )
    report = gates.evaluate(
        records,
        max_failed_ratio=start.max_failed_ratio,
        min_coverage=start.min_coverage,
        duration_s=start.window_s,
        window_start_ns=c.profiling_started_ns,
        aborted=c.failure,
        interrupted=c.interrupted,
    )
    arrivals = None
    if c.arrival_logs:
        unit = "request" if start.config.get("request_rate") is not None else "session"
        arrivals = arrival_summary(c.arrival_logs, unit)
    kinds = figures.errors.by_kind if figures.errors is not None else ()
    failed = failed_requests_line(kinds, figures.requests.total or 0)
    cache = figures.cache
    fit = kv_fit_warning(
        start.kv_tokens,
        lat.measured(records),
        start.lanes,
        cache.reported_hit_rate
        if cache.reported_hit_rate is not None
        else cache.server_metrics_hit_rate,
        cache.theoretical_hit_rate_ok,
        start.server_kind,
    )
    warnings = (
        *([failed] if failed else ()),
        *([fit] if fit else ()),
        *start.warnings,
        *start.plan_warnings,
        *c.warnings,
        *_run_warnings(c, records, verdict),
        *short_output_warnings(records, start.api, start.server_kind),
        *(arrival_warnings(arrivals) if arrivals is not None else ()),
    )
    summary = dataclasses.replace(
        figures,
        schedule=dataclasses.replace(figures.schedule, lanes=c.schedule, arrivals=arrivals),
        gates=report,
        tokenizer=None if tokenizer is None else tokenizer.name,  # whose tokens the theory counts
        bottleneck=verdict,
        warnings=warnings,
        server_identity=start.server_identity,
        client_host=client_host(),
        trace_fingerprint=start.trace_fingerprint,
        labels=start.labels,
    )
    write_results(out_dir, summary, records, theory, progress=progress)
    failure = "; ".join(report.reasons) if report.reasons else None
    return ReplayResult(summary, records, out_dir, warnings, c.interrupted, failure=failure)


def run_replicas(config: Mapping[str, Any]) -> Replicas | None:
    """The replicas of a run over several endpoints (client-side routing) or behind a
    server-side router (``--replica-metrics``), from its recorded options (URLs already
    redacted); ``None`` for one server."""
    endpoints = config.get("endpoints")
    if isinstance(endpoints, list) and len(endpoints) > 1:
        return Replicas(str(config.get("route")), tuple(str(e) for e in endpoints))
    metrics = config.get("replica_metrics")
    if isinstance(metrics, list) and metrics:
        return Replicas(BEHIND_A_ROUTER, tuple(str(u) for u in metrics))
    return None


def client_host() -> ClientHost:
    """The machine measuring the run."""
    return ClientHost(
        hostname=platform.node() or None,
        platform=platform.platform(terse=True) or None,
        python=platform.python_version(),
        cpus=os.cpu_count(),
    )


def _endpoint(start: RunStart) -> str:
    """The run's endpoint as summary.json names it: several replicas' URLs joined."""
    replicas = run_replicas(start.config)
    if replicas is not None and replicas.client_side:
        return ", ".join(replicas.endpoints)
    return start.endpoint


def _run_info(
    start: RunStart, c: Collected, config: dict[str, Any], *, saturated: bool | None
) -> RunInfo:
    """What the records do not say: the run's span, the client's CPU, the clock anchor."""
    wall_s = max((c.ended_ns - c.started_ns) / 1e9, 1e-9)
    return RunInfo(
        endpoint=_endpoint(start),
        model=start.model,
        started_at=start.started_at,
        duration_s=wall_s,
        window_s=start.window_s,
        sessions_started=c.sessions_started,
        sessions_completed=c.sessions_completed,
        client_cpu_percent=None if c.cpu_s is None else round(100.0 * c.cpu_s / wall_s, 1),
        client_saturated=saturated,
        config=config,
        started_perf_ns=c.started_ns,
        started_wall_ns=start.wall_ns(c.started_ns),
    )


def _run_warnings(
    c: Collected, records: Sequence[RequestRecord], verdict: Bottleneck | None
) -> list[str]:
    """What the reader of the figures must know about how the run went (what the set-up and
    the plan found is the run start's: :mod:`agentx.replay.rundir`)."""
    warnings = []
    if verdict is not None and (line := bottleneck_warning(verdict)) is not None:
        warnings.append(line)
    bad_usage = [r for r in records if r.error_type == ERR_BAD_USAGE]
    if bad_usage:
        warnings.append(
            f"{len(bad_usage)} responses reported impossible token counts (not an integer, "
            f"negative, above {MAX_TOKENS:,} or cached above prompt): those counts are unknown "
            f"on their rows (error_type {ERR_BAD_USAGE}), never summed; first: {bad_usage[0].error}"
        )
    if c.live_fallbacks:
        warnings.append(
            f"--assistant live: {c.live_fallbacks} requests used the recorded history (their recorded "
            "conversation did not extend the previous turn)"
        )
    return warnings


def short_output_warnings(records: Sequence[RequestRecord], api: str, server: str) -> list[str]:
    """A warning when the server returned fewer output tokens than were asked for: the replay
    then puts less decode load on it than the trace recorded."""
    short = [
        r
        for r in records
        if r.ok
        and r.completion_tokens is not None
        and r.expected_completion_tokens is not None
        and r.completion_tokens < r.expected_completion_tokens
    ]
    if not short:
        return []
    asked = sum(r.expected_completion_tokens or 0 for r in short)
    got = sum(r.completion_tokens or 0 for r in short)
    ok = sum(1 for r in records if r.ok)
    why = (
        "vLLM's /v1/messages takes only max_tokens (no ignore_eos, no min_tokens): replay with "
        "--api chat to hold output lengths"
        if api == "messages" and server == "vllm"
        else "the server stopped early (EOS or a stop sequence): --ignore-eos pins lengths on "
        "servers that honour ignore_eos/min_tokens"
    )
    return [
        f"{len(short)} of {ok} requests returned fewer output tokens than asked "
        f"({got:,} of {asked:,} tokens); {why}"
    ]
