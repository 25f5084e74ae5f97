"""Replay against serve-sim (in process): the salt keeps copies of a session from sharing cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.apis import Api
from agentx.cli import app
from agentx.core.examples import example_path
from agentx.replay import ReplayOptions, run_replay
from agentx.serve_sim import SimConfig, SimServer
from agentx.store.results import read_requests

from .factory import T0, anthropic_session, chat_session, gemini_session, responses_session, write

# modelled latency, quick: 2 ms a token, so inter-token gaps are there to measure
TIMED = {"prefill_tps": 2_000_000.0, "decode_tps": 500.0, "overhead_ms": 1.0}


@pytest.fixture
def sim() -> Iterator[SimServer]:
    with SimServer(SimConfig.of(port=0, fast=True)) as srv:
        yield srv


def replay(trace: Path, url: str, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    opts = ReplayOptions.of(
        trace=trace,
        endpoint=url,
        time_scale=0.0,
        output_dir=tmp_path / "out",
        force=True,
        progress=False,
        **kw,
    )
    return run_replay(opts).summary.to_json()


def test_second_run_hits_only_without_salt(sim: SimServer, tmp_path: Path) -> None:
    rows = [ex for i in range(3) for ex in chat_session(f"s{i}", turns=3, start_ns=T0 + i)]
    trace = write(tmp_path / "t.parquet", rows)

    first = replay(trace, sim.url, tmp_path, concurrency=2)
    cache = first["cache"]
    # a fresh server, a run alone: what it reports is what the trace allows, block for block
    assert cache["reported_hit_rate"] == pytest.approx(cache["theoretical_hit_rate"], abs=1e-9)
    assert cache["server_metrics_hit_rate"] == pytest.approx(cache["reported_hit_rate"], abs=1e-9)
    assert first["config"]["server_kind"] == "serve-sim" and first["config"]["ignore_eos"] is True
    assert first["tokens"]["output"] == 3 * 3 * 4  # recorded output lengths, pinned

    salted = replay(trace, sim.url, tmp_path, concurrency=2)["cache"]["reported_hit_rate"]
    unsalted = replay(trace, sim.url, tmp_path, concurrency=2, salt=False)["cache"][
        "reported_hit_rate"
    ]
    again = replay(trace, sim.url, tmp_path, concurrency=2, salt=False)["cache"][
        "reported_hit_rate"
    ]
    # with a salt, a second run re-uses only the shared system prompt: close to a cold run
    assert salted < cache["theoretical_hit_rate"] + 0.1
    # without one, the second identical run finds nearly everything cached
    assert again > 0.95 and again > unsalted + 0.15 and again > salted + 0.15


def test_anthropic_trace_as_chat_and_as_messages(sim: SimServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "a.parquet", anthropic_session("a", turns=3))
    for api in ("chat", "messages"):
        s = replay(trace, sim.url, tmp_path, api=api)
        assert s["requests"] == {**s["requests"], "total": 3, "ok": 3, "errors": 0}
        assert s["cache"]["reported_hit_rate"] is not None and s["cache"]["reported_hit_rate"] > 0.5


def test_responses_and_gemini_rows_replayed_natively(tmp_path: Path) -> None:
    """Codex-like (Responses) and gemini-cli-like (Gemini) sessions, each to its own route
    (`agentx replay --api native`): every request answers, streamed, with the length asked,
    TTFT and ITL measured, usage reported, and the hit rate the same three ways."""
    rows = [
        *responses_session("r1", turns=3, output_tokens=8),
        *responses_session("r2", turns=3, output_tokens=8),
        *gemini_session("g1", turns=3, output_tokens=8),
        *gemini_session("g2", turns=3, output_tokens=8),
    ]
    api_of = {ex.request_id: ex.api for ex in rows}
    trace = write(tmp_path / "rg.parquet", rows)
    out = tmp_path / "res"
    with SimServer(SimConfig.of(port=0, **TIMED)) as sim:
        argv = [str(trace), "--endpoint", sim.url, "--api", "native", "--time-scale", "0"]
        result = CliRunner().invoke(app, ["replay", *argv, "--json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["requests"] == {**summary["requests"], "total": 12, "ok": 12, "errors": 0}
    assert summary["requests"]["without_usage"] == 0 and summary["requests"]["bad_usage"] == 0
    assert summary["tokens"]["output"] == 12 * 8  # ignore_eos honoured on both routes
    assert not [w for w in summary.get("warnings", ()) if "fewer output tokens" in w]
    cache = summary["cache"]
    assert 0.5 < cache["reported_hit_rate"] < 1
    assert cache["reported_hit_rate"] == pytest.approx(cache["theoretical_hit_rate"], abs=1e-9)
    assert cache["server_metrics_hit_rate"] == pytest.approx(cache["reported_hit_rate"], abs=1e-9)
    latency = summary["latency_ms"]
    # measured, not asserted to the millisecond: a loaded machine may merge a few chunks
    assert latency["ttft"]["p50"] > 0 and latency["tpot"]["p50"] > 0 and latency["itl"]["max"] > 0

    records = read_requests(out / "requests.parquet")
    assert {api_of[r.source_request_id] for r in records} == {Api.OPENAI_RESPONSES, Api.GEMINI}
    for r in records:
        assert r.ok and r.ttft_ns and r.ttft_ns > 0 and len(r.itl_ns) == 7
        assert r.completion_tokens == 8
        assert r.prompt_tokens == r.expected_prompt_tokens  # the server counts as replay does
        assert r.cached_tokens == r.theoretical_hit_tokens
    for session in ("r1", "r2", "g1", "g2"):  # each turn finds the conversation before it cached
        turns = sorted((r for r in records if r.session_id == session), key=lambda r: r.turn)
        cached = [r.cached_tokens or 0 for r in turns]
        assert cached == sorted(cached) and cached[0] < cached[1] < cached[2]
        prompts = [r.prompt_tokens or 0 for r in turns]
        assert all(prompts[k] - 16 < cached[k + 1] for k in range(2))


def test_the_example_trace_replays_natively_in_its_three_families(tmp_path: Path) -> None:
    """The bundled example (Anthropic messages, OpenAI chat, OpenAI Responses), each request to
    its own family's route."""
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        s = replay(example_path("example"), sim.url, tmp_path, api="native", concurrency=4)
    assert s["requests"] == {**s["requests"], "total": 48, "ok": 48, "errors": 0}
    assert s["requests"]["without_usage"] == 0
    cache = s["cache"]
    assert cache["reported_hit_rate"] == pytest.approx(cache["theoretical_hit_rate"], abs=1e-9)
    assert cache["reported_hit_rate"] > 0.8
