"""The open-loop block of summary.json: offered vs achieved, slot waits, the warning."""

from __future__ import annotations

import pytest

from agentx.metrics.arrivals import arrival_summary, arrival_warnings
from agentx.results.summary.run import Arrivals
from agentx.schedule.arrivals import ArrivalLog


def test_offered_vs_achieved_and_slot_waits() -> None:
    log = ArrivalLog(
        offered_rate_per_s=2.0,
        cap=1,
        window_start_s=10.0,
        window_end_s=12.5,
        due_s=(10.5, 11.0, 11.5, 12.0),
        start_s=(10.5, 11.0, 11.8, 12.5),
        waited=2,
        missed=1,
    )
    block = arrival_summary([log], "session").to_json()
    assert block["mode"] == "open_loop" and block["offered_session_rate"] == 2.0
    assert block["achieved_session_rate"] == pytest.approx(4 / 2.5)
    assert block["arrivals_started"] == 4 and block["arrivals_waited_for_slot"] == 2
    assert block["arrivals_missed"] == 1 and block["concurrency_cap"] == 1
    assert block["arrival_start_delay_ms"]["max"] == pytest.approx(500.0)
    (warning,) = arrival_warnings(Arrivals.from_json(block))
    assert "2 session arrivals waited" in warning and "--concurrency 1" in warning


def test_client_processes_add_up() -> None:
    a = ArrivalLog(1.5, 4, 0.0, 2.0, (1.0,), (1.0,), 0, 0)
    b = ArrivalLog(1.5, 4, 100.0, 101.0, (100.2, 100.4), (100.2, 100.4), 0, 0)
    block = arrival_summary([a, b], "request").to_json()
    assert block["offered_request_rate"] == 3.0 and block["concurrency_cap"] == 8
    assert block["achieved_request_rate"] == pytest.approx(3 / 2.0)
    assert arrival_warnings(Arrivals.from_json(block)) == []
