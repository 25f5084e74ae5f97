"""run_replay end to end against the fault-injection server (real sockets on 127.0.0.1)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentx.core.errors import EndpointError, FormatError
from agentx.core.examples import example_path
from agentx.core.record import (
    ERR_CANCELLED,
    ERR_CONNECT,
    ERR_HTTP,
    ERR_NO_USAGE,
    ERR_PROTOCOL,
    ERR_RESET,
)
from agentx.formats import load_exchanges
from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.synth import hash_id_text
from agentx.prefixcache.theory import hash_only_blocks
from agentx.prefixcache.tokens import encode
from agentx.replay import ReplayOptions, bottleneck, lanes, run_replay
from agentx.store.results import read_requests

from .factory import T0, chat_session, write
from .fault_server import FaultServer


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(stall_s=5.0, slow_s=0.6) as srv:
        yield srv


def options(trace: Path, url: str, tmp_path: Path, **kw: Any) -> ReplayOptions:
    base: dict[str, Any] = {
        "trace": trace,
        "endpoint": url,
        "time_scale": 0.0,
        "output_dir": tmp_path / "out",
        "force": True,  # some tests replay twice into the same directory
        "progress": False,
        "scrape_metrics": False,
        # what these tests count is what the lanes send: no test request before them
        # (tests/replay/test_preflight.py tests it)
        "preflight": False,
    }
    base.update(kw)
    return ReplayOptions.of(**base)


def test_faults_become_typed_errors_and_the_run_goes_on(
    server: FaultServer, tmp_path: Path
) -> None:
    rows = []
    for i, fault in enumerate(["http500", "reset", "malformed", "nousage", "ok"]):
        rows += chat_session(f"s{i}", turns=2, user_text=f"fault:{fault} ", start_ns=T0 + i)
    trace = write(tmp_path / "t.parquet", rows)
    result = run_replay(options(trace, server.url + "/v1/", tmp_path, concurrency=3))
    s = result.summary.to_json()
    assert s["requests"]["total"] == 10
    by_type = Counter(r.error_type for r in result.records)
    assert by_type == {ERR_HTTP: 2, ERR_RESET: 2, ERR_PROTOCOL: 2, ERR_NO_USAGE: 2, None: 2}
    assert s["requests"]["errors"] == 6 and s["sessions"] == {"started": 5, "completed": 5}
    assert s["errors_by_type"] == {"http": 2, "protocol": 2, "reset": 2}
    assert s["model"] == "fault-model"  # the endpoint's first model
    # the results directory: requests.parquet reads back as the same rows, summary.json as printed
    assert read_requests(result.output_dir / "requests.parquet") == result.records
    assert orjson.loads((result.output_dir / "summary.json").read_bytes()) == orjson.loads(
        orjson.dumps(s)
    )
    assert len({r.request_id for r in result.records}) == 10


def test_server_dying_mid_run_yields_errors_not_a_crash(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lanes, "CONNECT_BACKOFF_S", 0.01)
    rows = chat_session("a", turns=4, user_text="fault:die ")
    trace = write(tmp_path / "t.parquet", rows)
    result = run_replay(options(trace, server.url, tmp_path))
    assert [r.error_type for r in result.records] == [
        ERR_RESET,
        ERR_CONNECT,
        ERR_CONNECT,
        ERR_CONNECT,
    ]
    assert result.records[0].ttft_ns is not None  # tokens before the crash were measured
    assert result.summary.to_json()["requests"] == {
        **result.summary.to_json()["requests"],
        "total": 4,
        "errors": 4,
    }
    assert (result.output_dir / "requests.parquet").exists()


def test_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("s", turns=1))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(
        EndpointError, match=f"cannot reach http://127.0.0.1:{port}: connection refused"
    ):
        run_replay(options(trace, f"http://127.0.0.1:{port}", tmp_path))


def test_theoretical_hits_cover_exactly_what_was_sent(server: FaultServer, tmp_path: Path) -> None:
    trace = write(
        tmp_path / "t.parquet",
        chat_session("a", turns=3) + chat_session("b", turns=3, start_ns=T0 + 1),
    )
    records = run_replay(options(trace, server.url, tmp_path, concurrency=1, salt=False)).records
    first, *rest = records
    assert first.theoretical_hit_tokens == 0 and first.expected_prompt_tokens
    assert all(r.theoretical_hit_tokens and r.expected_prompt_tokens for r in rest)
    for r in rest:
        assert r.theoretical_hit_tokens is not None and r.expected_prompt_tokens is not None
        assert (
            r.theoretical_hit_tokens % 16 == 0
            and r.theoretical_hit_tokens < r.expected_prompt_tokens
        )
    # the received bodies are the ones counted: salt off, so session b's first request shares
    # the system prompt with session a's
    assert records[3].theoretical_hit_tokens > 0
    assert [b["messages"][-1]["content"][:6] for b in server.requests] == [
        "step 0",
        "step 1",
        "step 2",
    ] * 2


def test_warmup_max_requests_and_recycling(server: FaultServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=2))
    result = run_replay(
        options(trace, server.url, tmp_path, concurrency=1, warmup=2, max_requests=3)
    )
    assert [r.warmup for r in result.records] == [True, True, False, False, False]
    assert (
        result.summary.to_json()["requests"]["total"] == 3
        and result.summary.to_json()["requests"]["warmup"] == 2
    )
    sessions = [r.session_id for r in result.records]
    assert sessions == ["a", "a", "a#1", "a#1", "a#2"]  # recycled copies
    salts = {b["messages"][1]["content"].split("]")[0] for b in server.requests}
    assert len(salts) == 3  # a fresh salt per copy


def test_duration_stops_new_requests_and_drains(server: FaultServer, tmp_path: Path) -> None:
    rows = chat_session("a", turns=3, user_text="fault:slow ") + chat_session(
        "b", turns=3, start_ns=T0 + 1
    )
    trace = write(tmp_path / "t.parquet", rows)
    result = run_replay(options(trace, server.url, tmp_path, concurrency=2, duration_s=0.3))
    slow = [r for r in result.records if r.session_id.startswith("a")]
    assert slow and all(r.ok and not r.in_window for r in slow)  # drained, not cut
    assert [r.turn for r in slow] == [0] * len(slow)  # the stop held back their next turns
    assert any(r.in_window for r in result.records if r.session_id.startswith("b"))
    deadline = min(r.sent_ns for r in result.records) + 300_000_000
    assert all(r.sent_ns <= deadline + 50_000_000 for r in result.records)  # none sent after
    drained = sum(not r.in_window for r in result.records)
    assert result.summary.to_json()["requests"]["drained"] == drained >= 1


def test_think_time_is_scaled_and_capped(server: FaultServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=2, think_s=1.0))

    def gap_s(**kw: Any) -> float:
        r0, r1 = run_replay(options(trace, server.url, tmp_path, **kw)).records
        return (r1.scheduled_ns - (r0.sent_ns + (r0.e2e_ns or 0))) / 1e9

    assert gap_s(time_scale=0.2) == pytest.approx(0.2, abs=0.02)
    assert gap_s(time_scale=0.2, max_think_s=0.05) == pytest.approx(0.05, abs=0.02)


def test_subagent_runs_concurrently_with_its_parent(server: FaultServer, tmp_path: Path) -> None:
    main = chat_session("s", turns=2, think_s=0.4)
    end0 = main[0].timing.start_wall_ns + (main[0].timing.e2e_ns or 0)
    sub = chat_session(
        "s", turns=2, thread_id="sub", start_ns=end0 + 1, parent_request_id=main[0].request_id
    )
    trace = write(tmp_path / "t.parquet", main + sub)
    records = run_replay(options(trace, server.url, tmp_path, time_scale=1.0)).records
    order = [(r.thread_id, r.turn) for r in records]
    assert order == [("main", 0), ("sub", 0), ("sub", 1), ("main", 1)]
    assert len({r.lane for r in records}) == 1


def test_ctrl_c_writes_partial_results(server: FaultServer, tmp_path: Path) -> None:
    rows = chat_session("a", turns=2) + chat_session(
        "b", turns=2, user_text="fault:hold ", start_ns=T0 + 1
    )
    trace = write(tmp_path / "t.parquet", rows)

    def interrupt(body: dict[str, Any]) -> None:
        if "fault:hold" in orjson.dumps(body).decode():
            os.kill(os.getpid(), signal.SIGINT)

    server.on_request = interrupt
    result = run_replay(options(trace, server.url, tmp_path, concurrency=2))
    assert result.interrupted
    cancelled = [r for r in result.records if r.error_type == ERR_CANCELLED]
    assert ("b", 0) in {(r.session_id, r.turn) for r in cancelled}  # the held one (a may race)
    assert all(r.ok or r.error_type == ERR_CANCELLED for r in result.records)
    assert all(r.turn == 0 for r in result.records if r.session_id == "b")  # nothing after it
    assert read_requests(result.output_dir / "requests.parquet") == result.records
    assert result.summary.to_json()["config"]["interrupted"] is True


def test_workers_share_lanes_and_merge(server: FaultServer, tmp_path: Path) -> None:
    rows = [ex for i in range(4) for ex in chat_session(f"s{i}", turns=2, start_ns=T0 + i)]
    trace = write(tmp_path / "t.parquet", rows)
    result = run_replay(options(trace, server.url, tmp_path, concurrency=2, workers=2, salt=False))
    records = result.records
    assert len(records) == 8 and all(r.ok for r in records)
    assert {r.request_id.split(".")[1] for r in records} == {"0", "1"}  # both workers sent
    assert sorted(r.sent_ns for r in records) == [r.sent_ns for r in records]
    assert all(r.theoretical_hit_tokens is not None for r in records)
    # one prefix cache over both workers' requests: a session's later turns hit its earlier ones
    assert sum(r.theoretical_hit_tokens or 0 for r in records if r.turn == 1) > 0
    assert result.summary.to_json()["sessions"] == {"started": 4, "completed": 4}


def test_endpoint_without_models_needs_model(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=1))
    with FaultServer(models=[]) as srv:
        with pytest.raises(EndpointError, match="pass --model"):
            run_replay(options(trace, srv.url, tmp_path))
        result = run_replay(options(trace, srv.url, tmp_path, model="given"))
    assert result.summary.to_json()["model"] == "given" and srv.requests[0]["model"] == "given"


def test_saturated_client_is_flagged(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bottleneck, "SATURATED_CPU_PERCENT", -1.0)  # any CPU use is too much
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=2))
    result = run_replay(options(trace, server.url, tmp_path))
    assert result.summary.to_json()["client"]["saturated"] is True
    assert any(w.startswith("the client delayed its own requests") for w in result.warnings)
    assert result.summary.to_json()["bottleneck"]["bottleneck"] == "client"
    assert result.summary.to_json()["warnings"] == list(result.warnings)


def test_live_assistant_threads_server_replies(server: FaultServer, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=3, output_tokens=3))
    result = run_replay(options(trace, server.url, tmp_path, assistant="live"))
    assert all(r.ok for r in result.records)
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert second[2] == {"role": "assistant", "content": "t0 t1 t2 "}  # the server's own reply
    assert third[: len(second)] == second and third[4]["content"] == "t0 t1 t2 "


def test_weka_trace_replays_with_synthetic_text(server: FaultServer, tmp_path: Path) -> None:
    weka = example_path("weka") / "trace_0010_head.json"
    result = run_replay(options(weka, server.url, tmp_path, max_requests=3, salt=False))
    assert [r.ok for r in result.records] == [True] * 3
    assert result.summary.to_json()["config"]["synthesized_rows"] == 35
    sent = [b["messages"][0]["content"] for b in server.requests]
    assert all(len(text) > 1000 for text in sent)
    assert all(
        r.expected_prompt_tokens and r.expected_prompt_tokens > 10_000 for r in result.records
    )


def test_a_hash_only_replay_sends_text_with_the_traces_hit_rate(
    server: FaultServer, tmp_path: Path
) -> None:
    """The text sent for a Weka trace shares exactly the prefixes its hash ids share: the
    theoretical hit rate of the sent tokens at the trace's block size equals the hash-level one
    of the same requests in the same order."""
    weka = tmp_path / "weka"
    weka.mkdir()
    shutil.copy(example_path("weka") / "trace_0010_head.json", weka / "t.json")  # subagents too
    result = run_replay(options(weka, server.url, tmp_path, salt=False, concurrency=1))
    assert [r.error for r in result.records if not r.ok] == []
    assert len(server.requests) == len(result.records)
    # each body is exactly the synthetic text of one trace request (hash_id_text, as convert
    # makes it), in the server's arrival order
    by_content = {}
    for ex in load_exchanges(weka):
        assert ex.hash_ids is not None and ex.usage.prompt_tokens is not None
        by_content[hash_id_text(ex.hash_ids, 64, ex.usage.prompt_tokens)] = ex
    bs = 64
    by_text, by_ids = UnboundedPrefixCache(bs), UnboundedPrefixCache(bs)
    for body in server.requests:
        (message,) = body["messages"]
        tokens = encode(message["content"])
        by_text.observe(block_hashes(tokens, bs), int(tokens.size))
        hashes, n, _ = hash_only_blocks(by_content[message["content"]], None)
        assert n == tokens.size  # token-exact: the trace's input length
        by_ids.observe(hashes, n)
    assert by_text.prompt_tokens == by_ids.prompt_tokens
    assert by_text.hit_tokens == by_ids.hit_tokens > 0.8 * by_ids.prompt_tokens


def test_a_lazy_plan_skips_sessions_with_nothing_to_replay(
    server: FaultServer, tmp_path: Path
) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    shutil.copy(example_path("weka") / "trace_0010_head.json", weka / "a.json")
    (weka / "b.json").write_text('{"id": "empty", "block_size": 64, "requests": []}')
    # recycling past the end: the empty session is skipped every time, never looped on
    result = run_replay(options(weka, server.url, tmp_path, max_requests=40, salt=False))
    assert len(result.records) == 40 and all(r.ok for r in result.records)
    assert {r.session_id.split("#")[0] for r in result.records} == {"trace_0010_head"}
    config = result.summary.to_json()["config"]
    assert (config["trace_sessions"], config["trace_sessions_indexed"]) == (2, 2)


def test_lanes_read_a_lazy_plans_sessions_only_when_they_reach_them(
    server: FaultServer, tmp_path: Path
) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    for i in range(8):
        shutil.copy(example_path("weka") / "trace_0010_head.json", weka / f"t{i}.json")
    # a snapshot start: each lane's first request is the primer of a session read just then
    result = run_replay(
        options(weka, server.url, tmp_path, concurrency=2, max_requests=4, start_ratio=(0.5, 0.5))
    )
    config = result.summary.to_json()["config"]
    assert config["trace_sessions"] == 8 and 2 <= config["trace_sessions_indexed"] <= 4
    primers = [r for r in result.records if r.warmup]
    assert len(primers) >= 2 and all(r.ok and r.turn > 0 for r in primers)
    assert [ln["session"] for ln in result.summary.to_json()["schedule"]["lanes"]] == [
        "trace_0010_head"
    ] * 2


def test_a_session_that_cannot_be_read_fails_the_run_when_a_lane_reaches_it(
    server: FaultServer, tmp_path: Path
) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    shutil.copy(example_path("weka") / "trace_0010_head.json", weka / "t0.json")
    (weka / "t1.json").write_text("{not json")
    with pytest.raises(FormatError, match=r"t1\.json"):
        run_replay(options(weka, server.url, tmp_path, concurrency=1, max_requests=50))


def test_workers_index_their_own_sessions_of_a_lazy_plan(
    server: FaultServer, tmp_path: Path
) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    for i in range(2):
        shutil.copy(example_path("weka") / "trace_0010_head.json", weka / f"t{i}.json")
    result = run_replay(
        options(weka, server.url, tmp_path, concurrency=2, workers=2, max_requests=6)
    )
    assert len(result.records) == 6 and all(r.ok for r in result.records)
    assert {r.request_id.split(".")[1] for r in result.records} == {"0", "1"}
    config = result.summary.to_json()["config"]
    assert (config["trace_sessions_indexed"], config["trace_requests"]) == (2, 70)
    assert config["synthesized_rows"] == 70
