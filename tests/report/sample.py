"""A realistic summary for report tests: 3 lanes, growing sessions, an error, server metrics, SLOs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentx.core.percentiles import P
from agentx.core.record import ERR_TIMEOUT, RequestRecord
from agentx.metrics.prometheus import ServerMetrics
from agentx.metrics.replicas import Replicas
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.results.summary import Summary
from agentx.results.summary.server import TierPart, Tiers

MS = 1_000_000
S = 1_000_000_000


def rec(**kw: Any) -> RequestRecord:
    base: dict[str, Any] = {
        "request_id": f"r{kw.get('lane', 0)}-{kw.get('turn', 0)}",
        "source_request_id": "src",
        "lane": 0,
        "session_id": "s",
        "thread_id": "main",
        "turn": 0,
        "warmup": False,
        "start_wall_ns": 1_700_000_000 * S,
        "scheduled_ns": kw.get("sent_ns", 0),
        "sent_ns": 0,
        "status": 200,
        "ok": True,
    }
    base.update(kw)
    return RequestRecord(**base)


def failed(error_type: str, **kw: Any) -> RequestRecord:
    return rec(ok=False, status=None, error_type=error_type, error="timed out", **kw)


MODEL = 'tiny-llama <&> "quoted"'


def records(slow: float = 1.0) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    for lane in range(3):
        t = lane * S // 3
        for turn in range(6):
            prompt = 1000 + 800 * turn
            cached = 0 if turn == 0 else (prompt - 800) // 16 * 16
            ttft = int((120 + 15 * turn) * slow * MS)
            gaps = (int(20 * slow * MS),) * 31
            out.append(
                rec(
                    lane=lane,
                    session_id=f"session-{lane}",
                    turn=turn,
                    sent_ns=t,
                    scheduled_ns=t - MS,
                    ttft_ns=ttft,
                    ttfc_ns=ttft,
                    e2e_ns=ttft + sum(gaps),
                    itl_ns=gaps,
                    prompt_tokens=prompt,
                    completion_tokens=32,
                    cached_tokens=cached,
                    expected_prompt_tokens=prompt,
                    theoretical_hit_tokens=cached,
                    warmup=turn == 0 and lane == 0,
                )
            )
            t += ttft + sum(gaps) + 200 * MS
    out.append(failed(ERR_TIMEOUT, lane=2, session_id="session-2", turn=6, sent_ns=4 * S))
    return out


def server() -> ServerMetrics:
    return ServerMetrics(
        hit_rate=0.61,
        tiers=Tiers(
            prompt_tokens=40000,
            local_cache_hit=TierPart(24000, 0.6),
            external_kv_transfer=TierPart(400, 0.01),
            local_compute=TierPart(15600, 0.39),
        ),
        kv_cache_usage_perc=P(p50=0.2, p90=0.4, p99=0.5, mean=0.25, max=0.5),
        time_series=[
            {
                "t_ns": i * S,
                "queries": 1000,
                "hits": 600,
                "hit_rate": 0.6,
                "kv_cache_usage_perc": 0.2,
            }
            for i in range(5)
        ],
        source="vllm",
        queries=40000,
        hits=24400,
        scrapes=6,
    )


def summary(
    slow: float = 1.0, slo: str = "ttft_p99<=300ms,itl_p50<=50ms,goodput>=0.9"
) -> dict[str, Any]:
    """The ``summary.json`` object of the sample run (a dict, as a results directory holds it)."""
    return typed(slow, slo).to_json()


def typed(slow: float = 1.0, slo: str = "ttft_p99<=300ms,itl_p50<=50ms,goodput>=0.9") -> Summary:
    """The sample run's summary as the reports read it."""
    run = RunInfo(
        endpoint="http://127.0.0.1:8011",
        model=MODEL,
        started_at="2025-06-01T12:00:00+00:00",
        duration_s=9.5,
        sessions_started=3,
        sessions_completed=2,
        client_cpu_percent=23.0,
        config={"concurrency": 3, "warmup": 1},
    )
    return build_summary(run, records(slow), server(), parse_slo(slo), block_size=16)


ROUTED = ("http://replica-a:8000", "http://replica-b:8000")


def routed_records() -> list[RequestRecord]:
    """The sample run routed by session over two replicas: lanes 0 and 2 on replica 0, lane 1
    on replica 1; each replica's own cache hits a block (16 tokens) less than the shared one
    on lane 2's turns after the first (what routing cost)."""
    out = []
    for r in records():
        replica = 1 if r.lane == 1 else 0
        if r.expected_prompt_tokens is None:  # the failed request was sent, and counted too
            r = replace(r, expected_prompt_tokens=5800, theoretical_hit_tokens=4992)
        own = r.theoretical_hit_tokens
        if own and r.lane == 2:
            own -= 16
        out.append(replace(r, replica=replica, replica_theoretical_hit_tokens=own))
    return out


def routed_server() -> ServerMetrics:
    pages = (
        ServerMetrics(hit_rate=0.5, kv_cache_usage_perc=P(0.1, 0.3, 0.4, 0.2, max=0.4)),
        ServerMetrics(hit_rate=0.7, kv_cache_usage_perc=P(0.2, 0.5, 0.6, 0.3, max=0.6)),
    )
    return replace(server(), replicas=pages)


def routed(policy: str = "session") -> Summary:
    """The sample run over :data:`ROUTED`, with its ``routing`` block."""
    run = RunInfo(
        endpoint=", ".join(ROUTED),
        model=MODEL,
        started_at="2025-06-01T12:00:00+00:00",
        duration_s=9.5,
        config={"concurrency": 3, "endpoints": list(ROUTED), "route": policy},
    )
    return build_summary(
        run, routed_records(), routed_server(), [], 16, replicas=Replicas(policy, ROUTED)
    )
