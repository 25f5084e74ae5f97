"""``summary.json`` (schema ``agentx.summary/1``, /work/shared/spec/cli.md) from a run's records.

The headline figures describe the *measured* requests: not warm-up, sent inside the ``--duration``
window. Requests sent after it (drained) are reported apart under ``windows.drained``. Latency
figures come from successful requests only; throughput is over the measured requests' own span
(first send to last finish), so warm-up time does not dilute it. What the server did not report
is ``null``, never 0. Definitions: ``docs/metrics.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentx import __version__
from agentx.metrics import latency as lat
from agentx.metrics import rollups
from agentx.metrics.percentiles import P, percentiles, ratio
from agentx.metrics.prometheus.server_metrics import ServerMetrics
from agentx.metrics.slo import SloCheck, evaluate
from agentx.record import RequestRecord

SCHEMA = "agentx.summary/1"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the replay engine knows about the run that the records do not say."""

    endpoint: str
    model: str
    started_at: str  # ISO-8601 wall clock
    duration_s: float  # whole run: first send to last response (drain included)
    window_s: float | None = None  # the measured window when --duration was given
    sessions_started: int = 0
    sessions_completed: int = 0
    client_cpu_percent: float = 0.0
    client_saturated: bool = False
    config: dict[str, Any] = field(default_factory=dict)  # replay options, never the api key


def _latency(records: Sequence[RequestRecord]) -> dict[str, Any]:
    def dist(fn: Callable[[RequestRecord], float | None]) -> P:
        return percentiles(lat.known(fn, records))

    return {
        "ttft": dist(lat.ttft_ms),
        "ttfc": dist(lat.ttfc_ms),
        "itl": percentiles(lat.pooled_itl_ms(records)),
        "tpot": dist(lat.tpot_ms),
        "e2e": dist(lat.e2e_ms),
    }


def _window(records: Sequence[RequestRecord]) -> dict[str, Any]:
    ok = [r for r in records if r.ok]
    span = lat.span_s(records)
    out = lat.total_tokens(lat.output_tokens, ok)
    return {
        "requests": len(records),
        "ok": len(ok),
        "errors": len(records) - len(ok),
        "span_s": span,
        "requests_per_s": ratio(len(ok), span),
        "output_tokens_per_s": ratio(out, span),
        "latency_ms": {
            "ttft": percentiles(lat.known(lat.ttft_ms, ok)),
            "e2e": percentiles(lat.known(lat.e2e_ms, ok)),
        },
    }


def build_summary(
    run: RunInfo,
    records: Sequence[RequestRecord],
    server: ServerMetrics | None,
    slo_checks: list[SloCheck],
    block_size: int,
) -> dict[str, Any]:
    """The ``summary.json`` object: the contract's keys first, then agentx's extra keys
    (``windows``, ``errors_by_type``, ``rollups``, ``server``, ``config``, ``agentx_version``)."""
    measured = lat.measured(records)
    drained = lat.drained(records)
    ok = [r for r in measured if r.ok]
    span = lat.span_s(measured)

    inp = lat.total_tokens(lat.input_tokens, ok)
    out = lat.total_tokens(lat.output_tokens, ok)
    cached_vals = [r.cached_tokens for r in ok if r.cached_tokens is not None]

    summary: dict[str, Any] = {
        "schema": SCHEMA,
        "endpoint": run.endpoint,
        "model": run.model,
        "started_at": run.started_at,
        "duration_s": run.duration_s,
        "requests": {
            "total": len(measured),
            "ok": len(ok),
            "errors": len(measured) - len(ok),
            "warmup": sum(1 for r in records if r.warmup),
            "drained": len(drained),
            "without_usage": sum(1 for r in ok if lat.no_usage(r)),
        },
        "sessions": {"started": run.sessions_started, "completed": run.sessions_completed},
        "tokens": {
            "input": inp,
            "output": out,
            "cached": sum(cached_vals) if cached_vals else None,
        },
        "throughput": {
            "requests_per_s": ratio(len(ok), span) or 0.0,
            "input_tokens_per_s": ratio(inp, span) or 0.0,
            "output_tokens_per_s": ratio(out, span) or 0.0,
        },
        "latency_ms": _latency(ok),
        "per_user_output_tokens_per_s": percentiles(lat.known(lat.output_tps_per_user, ok)),
        "cache": {
            "reported_hit_rate": rollups.reported_hit_rate(measured),
            "theoretical_hit_rate": rollups.theoretical_hit_rate(measured),
            "server_metrics_hit_rate": server.hit_rate if server else None,
            "tiers": server.tiers if server else None,
            "kv_cache_usage_perc": server.kv_cache_usage_perc if server else None,
            "block_size": block_size,
        },
        "schedule": {"dispatch_lag_ms": percentiles([lat.dispatch_lag_ms(r) for r in measured])},
        "client": {"cpu_percent": run.client_cpu_percent, "saturated": run.client_saturated},
    }
    summary["slo"] = evaluate(slo_checks, summary, records)

    origin = min((r.sent_ns for r in [*measured, *drained]), default=0)
    summary["windows"] = {
        "window_s": run.window_s,
        "in_window": _window(measured),
        "drained": _window(drained),
    }
    summary["errors_by_type"] = dict(
        sorted(Counter(r.error_type or "unknown" for r in measured if not r.ok).items())
    )
    summary["rollups"] = {
        "per_session": rollups.per_session(measured),
        "per_turn_depth": rollups.per_turn_depth(measured),
        "time_series": rollups.time_series(
            [*measured, *drained], origin, server.time_series if server else ()
        ),
    }
    summary["server"] = _server_block(server)
    summary["config"] = run.config
    summary["agentx_version"] = __version__  # the agentx that measured the run
    return summary


def _server_block(server: ServerMetrics | None) -> dict[str, Any] | None:
    if server is None:
        return None
    return {
        "source": server.source,
        "queries": server.queries,
        "hits": server.hits,
        "scrapes": server.scrapes,
        "scrape_errors": server.scrape_errors,
        "deltas": server.raw_deltas,
    }
