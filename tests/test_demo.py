"""The demo end to end: scripted agent -> capture -> scrub -> replay against serve-sim."""

from __future__ import annotations

from pathlib import Path

from agentx.demo.run import run_demo
from agentx.store import read_trace


def test_demo_captures_scrubs_and_replays(tmp_path: Path) -> None:
    result = run_demo(
        tmp_path, agent_sessions=2, agent_turns=3, trace=None, time_scale=0.0, say=lambda _: None
    )
    captured = read_trace(result.capture_path)
    assert result.captured_requests == len(captured) == 6
    assert len({ex.session_id for ex in captured}) == 2  # one per scripted agent session
    assert {ex.api for ex in captured} == {"anthropic.messages", "openai.chat"}
    # every later turn extends the previous one: a thread per session, parents chained
    assert sum(ex.parent_request_id is not None for ex in captured) == 4
    assert result.scrub.exchanges_out == 6

    summary = result.replays["capture"].to_json()
    assert (summary["requests"]["total"], summary["requests"]["ok"]) == (6, 6)
    cache = summary["cache"]
    # serve-sim reports exactly what the trace allows on a cold cache, three ways
    assert cache["theoretical_hit_rate"] > 0.3
    assert cache["reported_hit_rate"] == cache["server_metrics_hit_rate"]
    assert abs(cache["reported_hit_rate"] - cache["theoretical_hit_rate"]) < 1e-9
    assert (tmp_path / "replay-capture" / "summary.json").exists()
