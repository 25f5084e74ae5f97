"""Replay says when a server returns fewer output tokens than were asked for."""

from __future__ import annotations

from pathlib import Path

from agentx.core.examples import example_path
from agentx.core.record import RequestRecord
from agentx.replay import ReplayOptions, run_replay
from agentx.replay.finish import short_output_warnings
from agentx.serve_sim import SimConfig, SimServer


def _rec(asked: int, got: int | None, ok: bool = True) -> RequestRecord:
    return RequestRecord(
        request_id="r",
        source_request_id="s",
        lane=0,
        session_id="s",
        thread_id="t",
        turn=0,
        warmup=False,
        start_wall_ns=0,
        scheduled_ns=0,
        sent_ns=0,
        status=200,
        ok=ok,
        completion_tokens=got,
        expected_completion_tokens=asked,
    )


def test_warning_counts_short_answers_and_names_the_cause() -> None:
    assert (
        short_output_warnings([_rec(10, 10), _rec(10, None), _rec(10, 3, ok=False)], "chat", "vllm")
        == []
    )
    (w,) = short_output_warnings([_rec(10, 10), _rec(10, 4), _rec(20, 5)], "chat", "vllm")
    assert w.startswith("2 of 3 requests returned fewer output tokens than asked (9 of 30 tokens)")
    assert "--ignore-eos" in w
    (m,) = short_output_warnings([_rec(10, 4)], "messages", "vllm")
    assert "/v1/messages takes only max_tokens" in m and "--api chat" in m


def test_short_answers_reach_summary_and_report(tmp_path: Path) -> None:
    with SimServer(SimConfig.of(port=0, fast=True, eos_tokens=3)) as srv:
        result = run_replay(
            ReplayOptions.of(
                trace=example_path("example"),
                endpoint=srv.url,
                time_scale=0.0,
                ignore_eos=False,
                sessions=2,
                output_dir=tmp_path / "o",
                progress=False,
            )
        )
    warnings = result.summary.to_json()["warnings"]
    assert any("fewer output tokens than asked" in w for w in warnings)
    assert "fewer output tokens than asked" in (tmp_path / "o" / "report.html").read_text()
