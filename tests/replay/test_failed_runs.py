"""A run that could not measure what it claims says so and fails: the test request and the model
check before the run, every request failing during it, the failed-ratio gate by default, the
server's own words on stderr (also under --json) and in summary.json, and a request's whole URL
taken for the base URL."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.serve_sim import SimConfig, SimServer
from replay.factory import T0, chat_session, write
from replay.fault_server import MODEL, FaultServer

# what vLLM answers a request with tool_choice "auto" when it was started without a tool parser
TOOL_PARSER_400 = {
    "object": "error",
    "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
    "to be set",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
# what vLLM answers a prompt longer than its --max-model-len
CONTEXT_400 = {
    "object": "error",
    "message": "This model's maximum context length is 131072 tokens. However, you requested "
    "234567 tokens (234311 in the messages, 256 in the completion). Please reduce the length "
    "of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}


def replay(trace: Path, url: str, out: Path, *args: str) -> Any:
    argv = ["replay", str(trace), "--endpoint", url, "--time-scale", "0", "--no-metrics"]
    return CliRunner().invoke(app, [*argv, "-o", str(out), *args])


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write(tmp_path / "t.parquet", chat_session("s", turns=4))


def test_a_server_that_rejects_every_request_stops_the_run_before_it_starts(
    trace: Path, tmp_path: Path
) -> None:
    with FaultServer() as srv:
        srv.reject = (400, TOOL_PARSER_400)
        result = replay(trace, srv.url, tmp_path / "out")
        sent = len(srv.requests)
    assert result.exit_code == 1
    assert sent == 1  # the test request, and nothing after it
    err = " ".join(result.stderr.split())
    assert "failed a test request (HTTP 400" in err
    assert TOOL_PARSER_400["message"] in err  # the server's own words, whole
    assert "--enable-auto-tool-choice --tool-call-parser" in err  # and what to change
    assert "Traceback" not in result.output
    assert not (tmp_path / "out" / "summary.json").exists()


def test_the_test_request_offers_tools_when_the_sessions_first_thread_does_not(
    tmp_path: Path,
) -> None:
    # a session's first thread is often a title side call with no tools: a server without a
    # tool parser answers it and refuses every turn of the main thread
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    title = chat_session("s", turns=1, thread_id="title")
    main = [
        dataclasses.replace(ex, request={**ex.request, "tools": tools})
        for ex in chat_session("s", turns=3, start_ns=T0 + 10**9)
    ]
    trace = write(tmp_path / "t.parquet", [*title, *main])
    with FaultServer() as srv:
        srv.reject, srv.reject_only_tools = (400, TOOL_PARSER_400), True
        result = replay(trace, srv.url, tmp_path / "out")
        sent = list(srv.requests)
    assert result.exit_code == 1
    assert len(sent) == 1 and sent[0]["tools"]  # the test request was the main thread's turn
    err = " ".join(result.stderr.split())
    assert "the first request of thread main of session s" in err
    assert TOOL_PARSER_400["message"] in err


def test_every_request_failing_exits_1_with_the_servers_words_even_under_json(
    trace: Path, tmp_path: Path
) -> None:
    with FaultServer() as srv:
        srv.reject = (400, TOOL_PARSER_400)
        result = replay(trace, srv.url, tmp_path / "out", "--no-preflight", "--json")
        sent = len(srv.requests)
    assert sent == 4 and result.exit_code == 1
    err = " ".join(result.stderr.split())
    assert "4 of 4 measured requests failed: http 400 x4" in err
    assert TOOL_PARSER_400["message"] in err
    assert "run failed: every measured request failed (4 of 4)" in err
    summary = orjson.loads(result.stdout)
    (kind,) = summary["errors"]["by_kind"]
    assert (kind["kind"], kind["status"], kind["count"]) == ("http", 400, 4)
    assert kind["message"] == f"HTTP 400: {TOOL_PARSER_400['message']}"
    assert "--tool-call-parser" in kind["hint"]
    on_disk = orjson.loads((tmp_path / "out" / "summary.json").read_bytes())
    assert on_disk["errors"] == summary["errors"] and on_disk["gates"]["passed"] is False


def test_a_long_server_message_is_kept_whole_and_explained(trace: Path, tmp_path: Path) -> None:
    with FaultServer() as srv:
        srv.reject = (400, CONTEXT_400)
        result = replay(trace, srv.url, tmp_path / "out", "--no-preflight", "--json")
    assert result.exit_code == 1
    (kind,) = orjson.loads(result.stdout)["errors"]["by_kind"]
    assert kind["message"].endswith("Please reduce the length of the messages or completion.")
    assert "131072 tokens" in kind["hint"] and "--max-model-len" in kind["hint"]
    assert "agentx scrub --max-context 131072" in kind["hint"]


def test_most_requests_failing_trips_the_default_gate_and_off_turns_it_off(
    tmp_path: Path,
) -> None:
    trace = write(
        tmp_path / "t.parquet", [*chat_session("a", turns=8), *chat_session("b", turns=8)]
    )
    with FaultServer() as srv:  # answers 4, then fails every request: a server that went bad
        srv.reject, srv.reject_after = ((500, {"error": {"message": "engine died"}}), 4)
        gated = replay(trace, srv.url, tmp_path / "gated", "--no-preflight")
        srv.requests.clear()
        srv.reject_after = 12
        off = replay(
            trace, srv.url, tmp_path / "off", "--no-preflight", "--max-failed-ratio", "off"
        )
    assert gated.exit_code == 1
    assert "more than --max-failed-ratio 0.5" in " ".join(gated.stderr.split())
    assert off.exit_code == 0  # 4 of 16 failed: measured, and said (in the report's warnings)
    assert "4 of 16 measured requests failed: http 500 x4: HTTP 500: engine died" in " ".join(
        (off.stdout + off.stderr).split()
    )
    summary = orjson.loads((tmp_path / "off" / "summary.json").read_bytes())
    cache = summary["cache"]
    # the theoretical figure of what was sent, and of what succeeded, side by side
    assert cache["theoretical_hit_rate_ok"] is not None
    assert cache["theoretical_hit_rate_ok"] != cache["theoretical_hit_rate"]


def test_a_model_the_server_does_not_list_is_refused_with_its_list(
    trace: Path, tmp_path: Path
) -> None:
    with FaultServer(models=[{"id": "qwen-a"}, {"id": "qwen-b"}]) as srv:
        result = replay(trace, srv.url, tmp_path / "out", "--model", "nope")
        sent = len(srv.requests)
    assert result.exit_code == 1 and sent == 0
    assert "does not serve --model nope: /v1/models lists qwen-a, qwen-b" in " ".join(
        result.stderr.split()
    )


def test_a_models_list_with_null_ids_names_no_model(trace: Path, tmp_path: Path) -> None:
    with FaultServer(models=[{"id": None}]) as srv:
        result = replay(trace, srv.url, tmp_path / "out")
    assert result.exit_code == 1
    assert "lists no models on /v1/models: pass --model" in result.stderr


def test_a_requests_whole_url_is_taken_for_the_base_url(trace: Path, tmp_path: Path) -> None:
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        base = sim.url
        result = replay(trace, f"{base}/v1/chat/completions", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.stdout)
    assert summary["requests"]["ok"] == 4
    note = [w for w in summary["warnings"] if "--endpoint ends in /v1/chat/completions" in w]
    assert note and base in note[0]


def test_the_test_request_leaves_the_hit_rates_as_if_it_had_not_been_sent(
    trace: Path, tmp_path: Path
) -> None:
    """Its marker leads both the tools and the system prompt: whatever a template renders first,
    it shares no block with the run, so serve-sim's reported rate equals the theoretical one."""
    tool = {
        "type": "function",
        "function": {"name": "read_file", "description": "Read a file. " * 40, "parameters": {}},
    }
    rows = [
        dataclasses.replace(ex, request={**ex.request, "tools": [tool], "tool_choice": "auto"})
        for ex in chat_session("s", turns=4)
    ]
    trace = write(tmp_path / "tools.parquet", rows)
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        result = replay(trace, sim.url, tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    cache = orjson.loads(result.stdout)["cache"]
    assert cache["reported_hit_rate"] == pytest.approx(cache["theoretical_hit_rate"], abs=1e-12)


MARKER = re.compile(r"\[rid:([0-9a-f]{12})\]")


def test_the_same_seed_sends_the_same_bytes(tmp_path: Path) -> None:
    trace = write(
        tmp_path / "t.parquet", [*chat_session("a", turns=3), *chat_session("b", turns=3)]
    )

    def bodies(*args: str) -> list[bytes]:
        with FaultServer() as srv:
            result = replay(trace, srv.url, tmp_path / "o", "--force", "--concurrency", "2", *args)
            assert result.exit_code == 0, result.output
            return sorted(orjson.dumps(b, option=orjson.OPT_SORT_KEYS) for b in srv.requests)

    first, again = bodies("--seed", "7"), bodies("--seed", "7")
    assert first == again and MARKER.search(first[0].decode())
    other = bodies("--seed", "8")
    assert other != first and len(other) == len(first)
    unseeded = bodies(), bodies()  # no seed: every run its own markers, as before
    assert unseeded[0] != unseeded[1]


def test_the_model_the_run_sends_is_the_listed_one(trace: Path, tmp_path: Path) -> None:
    with FaultServer() as srv:
        result = replay(trace, srv.url, tmp_path / "out", "--json")
        models = {b.get("model") for b in srv.requests}
    assert result.exit_code == 0 and models == {MODEL}


def test_a_cache_smaller_than_a_prompt_is_named_with_what_to_pass(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("s", turns=6))
    with SimServer(SimConfig.of(port=0, fast=True, kv_tokens=512, block_size=16)) as sim:
        result = CliRunner().invoke(
            app,
            ["replay", str(trace), "--endpoint", sim.url, "--time-scale", "0", "--json"],
        )
    assert result.exit_code == 0, result.output
    err = " ".join(result.stderr.split())
    assert "the server's KV cache holds 512 tokens, less than the largest prompt sent" in err
    assert "agentx serve-sim --profile agentx" in err


def test_more_sessions_than_the_trace_has_is_said(trace: Path, tmp_path: Path) -> None:
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        result = replay(trace, sim.url, tmp_path / "out", "--sessions", "200", "--json")
    assert result.exit_code == 0, result.output
    warnings = orjson.loads(result.stdout)["warnings"]
    assert any("--sessions 200: the trace has 1 sessions to replay" in w for w in warnings)


def test_a_long_think_time_is_announced_with_the_time_scale_hint(tmp_path: Path) -> None:
    rows = chat_session("s", turns=3, think_s=20.0)
    trace = write(tmp_path / "slow.parquet", rows)
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        argv = ["replay", str(trace), "--endpoint", sim.url, "--time-scale", "0.01", "--json"]
        quick = CliRunner().invoke(app, [*argv, "-o", str(tmp_path / "a")])
        from agentx.replay.estimate import schedule_line, think_floor_s
        from agentx.replay.options import ReplayOptions
        from agentx.workload.plan import build_plan
        from agentx.workload.source import open_source

        o = ReplayOptions.of(trace=trace, endpoint=sim.url)
        floor = think_floor_s(build_plan(open_source(trace)), o, 1)
    assert quick.exit_code == 0 and "--time-scale 0 sends" not in quick.stderr  # 0.4 s: no word
    assert floor == pytest.approx(40.0)  # two gaps of 20 s on the main thread
    line = schedule_line(floor, o)
    assert line is not None and "at least ~40s of recorded think time" in line
    assert "--time-scale 0 sends each turn" in line
