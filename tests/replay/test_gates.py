"""The failure and coverage gates, on hand-made records."""

from __future__ import annotations

from agentx.core.record import RequestRecord
from agentx.replay.gates import FailedRatioGate, coverage, evaluate

S = 1_000_000_000


def rec(
    sent_s: float, *, ok: bool = True, warmup: bool = False, e2e_s: float = 1.0
) -> RequestRecord:
    return RequestRecord(
        request_id="r",
        source_request_id="x",
        lane=0,
        session_id="s",
        thread_id="t",
        turn=0,
        warmup=warmup,
        start_wall_ns=0,
        scheduled_ns=int(sent_s * S),
        sent_ns=int(sent_s * S),
        status=200 if ok else 500,
        ok=ok,
        ttft_ns=int(0.1 * S) if ok else None,
        e2e_ns=int(e2e_s * S) if ok else None,
        itl_ns=(1000,) if ok else (),
    )


def test_the_live_gate_waits_for_enough_requests_then_trips_once() -> None:
    gate = FailedRatioGate(0.1, after=4)  # never before 10 requests (the harness's floor)
    results = [gate.add(ok) for ok in [False] * 9]
    assert results == [None] * 9
    reason = gate.add(True)
    assert reason is not None and "9 of 10 measured requests failed (90.0 %)" in reason
    assert gate.add(False) is None  # once
    assert FailedRatioGate(None).add(False) is None


def test_evaluate_counts_measured_requests_only() -> None:
    records = [rec(0, ok=False, warmup=True)] * 5 + [rec(1)] * 9 + [rec(2, ok=False)]
    report = evaluate(
        records, max_failed_ratio=0.05, min_coverage=None, duration_s=None, window_start_ns=None
    )
    assert report.failed_ratio == 0.1 and not report.passed
    assert "1 of 10 measured requests failed" in report.reasons[0]
    ok = evaluate(
        records, max_failed_ratio=0.1, min_coverage=None, duration_s=None, window_start_ns=None
    )
    assert ok.passed and ok.to_json()["reasons"] == []


def test_coverage_is_how_far_measured_traffic_reached_into_the_window() -> None:
    records = [rec(10), rec(500, e2e_s=400)]  # last first token 500.1, last end 900
    assert coverage(records, 0, 1000.0) == 0.5001
    short = evaluate(
        records, max_failed_ratio=None, min_coverage=0.95, duration_s=1000.0, window_start_ns=0
    )
    assert not short.passed and "covered 50.0 % of the 1000 s window" in short.reasons[0]
    assert short.coverage == 0.5001
    late = [*records, rec(960)]
    assert evaluate(
        late, max_failed_ratio=None, min_coverage=0.95, duration_s=1000.0, window_start_ns=0
    ).passed
    # windows under 900 s are not coverage-gated (as agentx-harness)
    assert (
        evaluate(
            records, max_failed_ratio=None, min_coverage=0.95, duration_s=600.0, window_start_ns=0
        ).coverage
        is None
    )
