"""``summary.json`` (:class:`agentx.results.summary.Summary`) from a run's records.

The headline figures describe the *measured* requests: not warm-up, sent inside the ``--duration``
window. Requests sent after it (drained) are reported apart under ``windows.drained``. Latency
figures come from successful requests only; throughput is over the measured requests' own span
(first send to last finish), so warm-up time does not dilute it. What the server did not report
is ``null``, never 0. Definitions: ``docs/metrics.md``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentx import __version__
from agentx.core.percentiles import (
    CURVE_LEVELS,
    P,
    distribution,
    percentiles,
    quantile_curve,
    ratio,
)
from agentx.core.record import ERR_BAD_USAGE, RequestRecord
from agentx.core.urls import redact_url
from agentx.metrics import latency as lat
from agentx.metrics import rollups
from agentx.metrics.cost import CostOptions, cost_summary
from agentx.metrics.errors import error_kinds
from agentx.metrics.prometheus.server_metrics import ServerMetrics
from agentx.metrics.replicas import Replicas, replica_routing
from agentx.metrics.slo import SloCheck, evaluate
from agentx.results.summary import (
    Cache,
    Client,
    Latency,
    RequestCounts,
    Schedule,
    SessionCounts,
    Summary,
    Throughput,
    TokenTotals,
    Window,
    WindowLatency,
    Windows,
)
from agentx.results.summary.errors import Errors
from agentx.results.summary.rollups import LatencyCurves, Rollups
from agentx.results.summary.run import Clock
from agentx.results.summary.server import ServerBlock


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the replay engine knows about the run that the records do not say."""

    endpoint: str
    model: str
    started_at: str  # ISO-8601 wall clock
    duration_s: float  # whole run: first send to last response (drain included)
    window_s: float | None = None  # the measured window when --duration was given
    sessions_started: int | None = 0  # None: unknown (a run recovered from its spool)
    sessions_completed: int | None = 0
    client_cpu_percent: float | None = 0.0
    client_saturated: bool | None = False
    config: dict[str, Any] = field(default_factory=dict)  # replay options, never the api key
    # the run's start on the rows' clock (perf counter) and on the wall clock: maps sent_ns to
    # wall time, so shards measured on different machines merge onto one clock
    started_perf_ns: int | None = None
    started_wall_ns: int | None = None


def latency_ms(
    records: Sequence[RequestRecord],
    extra: Iterable[float] = (),
    itl: npt.NDArray[np.float64] | None = None,
) -> Latency:
    """``latency_ms`` of ``summary.json`` over the successful ``records``, with the percentiles
    ``extra`` beyond the contract's (``--percentiles``). ``itl``: their pooled gaps, when the
    caller has them already (reordered in place: no copy of millions of gaps)."""
    qs = tuple(extra)
    gaps = lat.pooled_itl_ms(records) if itl is None else itl

    def dist(fn: Callable[[RequestRecord], float | None]) -> P:
        return distribution(lat.known(fn, records), qs)

    return Latency(
        ttft=dist(lat.ttft_ms),
        ttfc=dist(lat.ttfc_ms),
        itl=distribution(gaps, qs, scratch=True),
        tpot=dist(lat.tpot_ms),
        e2e=dist(lat.e2e_ms),
    )


def latency_curves_ms(
    records: Sequence[RequestRecord], itl: npt.NDArray[np.float64] | None = None
) -> LatencyCurves:
    """Quantile curves of TTFT, ITL and E2E: the reports' CDFs. ``levels`` are the percentiles
    the values sit at. ``itl`` as :func:`latency_ms`."""
    return LatencyCurves(
        levels=CURVE_LEVELS,
        ttft=_curve(quantile_curve(lat.known(lat.ttft_ms, records))),
        itl=_curve(
            quantile_curve(lat.pooled_itl_ms(records) if itl is None else itl, scratch=True)
        ),
        e2e=_curve(quantile_curve(lat.known(lat.e2e_ms, records))),
    )


def _curve(values: list[float] | None) -> tuple[float, ...] | None:
    return None if values is None else tuple(values)


def _window(records: Sequence[RequestRecord]) -> Window:
    ok = [r for r in records if r.ok]
    span = lat.span_s(records)
    out = lat.total_tokens(lat.output_tokens, ok)
    return Window(
        requests=len(records),
        ok=len(ok),
        errors=len(records) - len(ok),
        span_s=span,
        requests_per_s=ratio(len(ok), span),
        output_tokens_per_s=ratio(out, span),
        latency_ms=WindowLatency(
            ttft=percentiles(lat.known(lat.ttft_ms, ok)),
            e2e=percentiles(lat.known(lat.e2e_ms, ok)),
        ),
    )


def build_summary(
    run: RunInfo,
    records: Sequence[RequestRecord],
    server: ServerMetrics | None,
    slo_checks: list[SloCheck],
    block_size: int,
    *,
    extra_percentiles: Sequence[float] = (),
    cost: CostOptions | None = None,
    replicas: Replicas | None = None,
) -> Summary:
    """The figures of ``summary.json``: everything but what the replay engine adds (gates,
    bottleneck, the lanes' starts, warnings) and a merge adds (its shards).
    ``extra_percentiles`` adds ``pNN`` keys to the distributions; ``replicas``: a run over
    several replicas, its ``routing`` block."""
    measured = lat.measured(records)
    drained = lat.drained(records)
    ok = [r for r in measured if r.ok]
    span = lat.span_s(measured)

    inp = lat.total_tokens(lat.input_tokens, ok)
    out = lat.total_tokens(lat.output_tokens, ok)
    itl = lat.pooled_itl_ms(ok)  # once: millions of gaps on a long run
    cached_vals = [r.cached_tokens for r in ok if r.cached_tokens is not None]

    summary = Summary(
        endpoint=run.endpoint,
        model=run.model,
        started_at=run.started_at,
        duration_s=run.duration_s,
        requests=RequestCounts(
            total=len(measured),
            ok=len(ok),
            errors=len(measured) - len(ok),
            warmup=sum(1 for r in records if r.warmup),
            drained=len(drained),
            without_usage=sum(1 for r in ok if lat.no_usage(r)),
            bad_usage=sum(1 for r in ok if r.error_type == ERR_BAD_USAGE),
        ),
        sessions=SessionCounts(run.sessions_started, run.sessions_completed),
        tokens=TokenTotals(inp, out, sum(cached_vals) if cached_vals else None),
        throughput=Throughput(
            requests_per_s=ratio(len(ok), span) or 0.0,
            input_tokens_per_s=ratio(inp, span) or 0.0,
            output_tokens_per_s=ratio(out, span) or 0.0,
        ),
        latency_ms=latency_ms(ok, extra_percentiles, itl),
        per_user_output_tokens_per_s=distribution(
            lat.known(lat.output_tps_per_user, ok), extra_percentiles
        ),
        cache=Cache(
            reported_hit_rate=rollups.reported_hit_rate(measured),
            theoretical_hit_rate=rollups.theoretical_hit_rate(measured),
            server_metrics_hit_rate=server.hit_rate if server else None,
            tiers=server.tiers if server else None,
            kv_cache_usage_perc=server.kv_cache_usage_perc if server else None,
            block_size=block_size,
            theoretical_hit_rate_ok=rollups.theoretical_hit_rate(ok),
        ),
        schedule=Schedule(
            distribution([lat.dispatch_lag_ms(r) for r in measured], extra_percentiles)
        ),
        client=Client(run.client_cpu_percent, run.client_saturated),
    )
    origin = min((r.sent_ns for r in [*measured, *drained]), default=0)
    summary = dataclasses.replace(
        summary,
        slo=evaluate(slo_checks, summary, records),
        windows=Windows(run.window_s, _window(measured), _window(drained)),
        errors_by_type=dict(
            sorted(Counter(r.error_type or "unknown" for r in measured if not r.ok).items())
        ),
        errors=Errors(error_kinds(measured)),
        rollups=Rollups(
            per_session=tuple(rollups.per_session(measured)),
            per_turn_depth=tuple(rollups.per_turn_depth(measured)),
            time_series=tuple(
                rollups.time_series(
                    [*measured, *drained], origin, server.time_series if server else ()
                )
            ),
            latency_quantiles_ms=latency_curves_ms(ok, itl),
        ),
        server=_server_block(server),
        clock=(
            Clock(run.started_perf_ns, run.started_wall_ns)
            if run.started_perf_ns is not None and run.started_wall_ns is not None
            else None
        ),
        config=run.config,
        agentx_version=__version__,  # the agentx that measured the run
        routing=None if replicas is None else replica_routing(replicas, records, server),
    )
    return with_cost(summary, cost)


def _server_block(server: ServerMetrics | None) -> ServerBlock | None:
    return None if server is None else _block(server)


def _block(server: ServerMetrics) -> ServerBlock:
    return ServerBlock(
        source=server.source,
        queries=server.queries,
        hits=server.hits,
        scrapes=server.scrapes,
        scrape_errors=server.scrape_errors,
        deltas=server.raw_deltas,
        url=redact_url(server.url) if server.url else server.url,  # also a merge's server key
        counters=server.counters,
        # (t_ns, value) of every scrape, on the run's clock: what a merge pools
        kv_cache_usage_samples=tuple(
            (p["t_ns"], p["kv_cache_usage_perc"])
            for p in server.time_series
            if p.get("kv_cache_usage_perc") is not None
        ),
        window_t_ns=(
            (server.time_series[0]["t_ns"], server.time_series[-1]["t_ns"])
            if server.time_series
            else None
        ),
        # each replica's own page, raw: what a merge of routed shards combines per replica
        replicas=tuple(_block(m) for m in server.replicas) if server.replicas else None,
    )


def with_percentiles(
    summary: Summary, records: Sequence[RequestRecord], extra: Sequence[float]
) -> Summary:
    """``summary`` with its distributions recomputed from the run's ``records`` to carry the
    percentiles ``extra`` (``agentx report --percentiles``); the rest is unchanged."""
    measured = lat.measured(records)
    ok = [r for r in measured if r.ok]
    return dataclasses.replace(
        summary,
        latency_ms=latency_ms(ok, extra),
        per_user_output_tokens_per_s=distribution(lat.known(lat.output_tps_per_user, ok), extra),
        schedule=dataclasses.replace(
            summary.schedule,
            dispatch_lag_ms=distribution([lat.dispatch_lag_ms(r) for r in measured], extra),
        ),
        config={**summary.config, "percentiles": list(extra)},
    )


def with_curves(summary: Summary, records: Sequence[RequestRecord]) -> Summary:
    """``summary`` with ``rollups.latency_quantiles_ms`` computed from ``records`` when it has
    none (a results directory written before agentx drew CDFs)."""
    if summary.rollups.latency_quantiles_ms is not None or not records:
        return summary
    ok = [r for r in lat.measured(records) if r.ok]
    curves = latency_curves_ms(ok)
    return dataclasses.replace(
        summary, rollups=dataclasses.replace(summary.rollups, latency_quantiles_ms=curves)
    )


def with_cost(summary: Summary, cost: CostOptions | None) -> Summary:
    """``summary`` with its ``cost`` block computed for ``cost`` (``agentx report --gpu-hour-cost
    ...``): the figures follow from the throughput and token mix the summary already has."""
    if cost is None:
        return summary
    return dataclasses.replace(summary, cost=cost_summary(cost, summary))
