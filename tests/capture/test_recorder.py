"""The recorder fed its typed events directly (no proxy): what the addon would hand it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agentx.apis import Api
from agentx.capture.recorder import Recorder, summary_line
from agentx.capture.recorder.events import (
    Event,
    FlowError,
    RequestSent,
    ResponseData,
    ResponseEnd,
    ResponseHeaders,
)
from agentx.core.flags import FLAG_NO_RESPONSE, FLAG_NON_MODEL, FLAG_PARTIAL
from agentx.core.models import Exchange
from agentx.store import TraceWriter, read_trace

MS = 1_000_000
BODY = {
    "model": "m",
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}],
}


def _chunk(obj: object) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _request(key: str, t: int, path: str = "/v1/chat/completions") -> RequestSent:
    return RequestSent(
        key=key,
        start_ns=t,
        wall_ns=1_700_000_000_000_000_000 + t,
        method="POST",
        path=path,
        headers=[(b"content-type", b"application/json"), (b"user-agent", b"claude-cli/2.0")],
        raw_body=orjson.dumps(BODY),
        peer=None,
        conn_id="c1",
    )


def _record(tmp_path: Path, *events: Event, keep_non_model: bool = True) -> list[Exchange]:
    path = tmp_path / "t.parquet"
    rec = Recorder(TraceWriter(path), keep_non_model=keep_non_model, resolve_processes=False)
    for ev in events:
        rec.process(ev)
    rec.close()
    return read_trace(path)


def test_a_streamed_exchange_becomes_one_row_with_its_timings(tmp_path: Path) -> None:
    (ex,) = _record(
        tmp_path,
        _request("f1", 0),
        ResponseHeaders("f1", 5 * MS, 200, "text/event-stream", None),
        ResponseData("f1", 7 * MS, _chunk({"choices": [{"index": 0, "delta": {"content": "he"}}]})),
        ResponseData("f1", 9 * MS, _chunk({"choices": [{"index": 0, "delta": {"content": "y"}}]})),
        ResponseData(
            "f1",
            10 * MS,
            _chunk({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}})
            + b"data: [DONE]\n\n",
        ),
        ResponseEnd("f1", 11 * MS),
    )
    assert ex.api == Api.OPENAI_CHAT and ex.status == 200 and ex.response.text == "hey"
    assert ex.timing.ttfb_ns == 5 * MS and ex.timing.ttft_ns == 7 * MS
    assert ex.timing.e2e_ns == 11 * MS
    assert ex.timing.chunk_offsets_ns == (7 * MS, 9 * MS, 10 * MS)
    assert ex.usage.prompt_tokens == 12 and ex.usage.completion_tokens == 2
    assert ex.agent == "claude-code" and FLAG_PARTIAL not in ex.flags


def test_a_broken_stream_is_a_partial_row_and_other_traffic_is_flagged(tmp_path: Path) -> None:
    rows = _record(
        tmp_path,
        _request("f1", 0),
        _request("f2", 1 * MS, path="/v1/models"),
        ResponseHeaders("f1", 5 * MS, 200, "text/event-stream", None),
        ResponseData("f1", 7 * MS, _chunk({"choices": [{"index": 0, "delta": {"content": "x"}}]})),
        FlowError("f1", 8 * MS, "connection reset"),
        ResponseHeaders("f2", 2 * MS, 200, "application/json", None),
        ResponseData("f2", 3 * MS, b'{"data": []}'),
        ResponseEnd("f2", 3 * MS),
    )
    by_path = {ex.path: ex for ex in rows}
    broken = by_path["/v1/chat/completions"]
    assert FLAG_PARTIAL in broken.flags and broken.error == "connection reset"
    other = by_path["/v1/models"]
    assert other.api == Api.OTHER and FLAG_NON_MODEL in other.flags


def test_partial_counts_model_calls_only(tmp_path: Path) -> None:
    """Telemetry the agent abandons (a non-model row with no response) is no partial model call."""
    path = tmp_path / "t.parquet"
    rec = Recorder(TraceWriter(path), resolve_processes=False)
    for ev in (
        _request("f1", 0),
        _request("f2", 1 * MS, path="/batch/"),
        ResponseHeaders("f1", 5 * MS, 200, "text/event-stream", None),
        ResponseData("f1", 7 * MS, _chunk({"choices": [{"index": 0, "delta": {"content": "x"}}]})),
        FlowError("f1", 8 * MS, "connection reset"),
        FlowError("f2", 9 * MS, "connection reset"),
    ):
        rec.process(ev)
    stats = rec.close()
    rows = {ex.path: ex for ex in read_trace(path)}
    assert (
        FLAG_NO_RESPONSE in rows["/batch/"].flags
        and FLAG_PARTIAL in rows["/v1/chat/completions"].flags
    )
    assert (stats.requests, stats.other, stats.partial) == (1, 1, 1)
    assert "1 partial" in summary_line(stats)


def test_other_traffic_dropped_by_option_leaves_no_row_and_no_state(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    rec = Recorder(TraceWriter(path), keep_non_model=False, resolve_processes=False)
    rec.process(_request("f2", 0, path="/v1/models"))
    rec.process(ResponseHeaders("f2", 1, 200, "application/json", None))
    rec.process(ResponseData("f2", 2, b"{}"))
    assert "f2" in rec.exchanges.ignored
    rec.process(ResponseEnd("f2", 3))
    assert not rec.exchanges.ignored and not rec.exchanges.flows
    stats = rec.close()
    assert stats.dropped == 1 and read_trace(path) == []


# -- two agents in one process -------------------------------------------------------------------

GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}]
AIDER_SYSTEM = {"role": "system", "content": "Act as an expert software developer. " * 8}
REMINDER = "\n\nAlways reply with SEARCH/REPLACE blocks."


def _gemini_turn(n: int) -> tuple[dict[str, object], bytes]:
    """gemini-cli's n-th call of one conversation (function calls and their results), answered
    with a function call until the third."""
    contents: list[object] = [{"role": "user", "parts": [{"text": "Create notes.txt and show it"}]}]
    for k in range(n):
        contents += [
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {
                            "name": "run_shell_command",
                            "args": {"command": f"step {k}"},
                        }
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "run_shell_command",
                            "response": {"output": "ok"},
                        }
                    }
                ],
            },
        ]
    part: dict[str, object] = (
        {"functionCall": {"name": "run_shell_command", "args": {"command": f"step {n}"}}}
        if n < 2
        else {"text": "All done."}
    )
    answer = {
        "candidates": [
            {"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [part]}}
        ],
        "usageMetadata": {"promptTokenCount": 100 + n, "candidatesTokenCount": 5},
    }
    body = {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are gemini."}]},
        "tools": GEMINI_TOOLS,
    }
    return body, orjson.dumps(answer)


def _aider_turn(n: int) -> tuple[dict[str, object], bytes]:
    """aider's n-th call: the reminder rides on the *current* question and leaves the earlier
    ones; the stream reports no usage."""
    messages: list[object] = [AIDER_SYSTEM]
    for k in range(n):
        messages += [
            {"role": "user", "content": f"Question {k}"},
            {"role": "assistant", "content": f"Answer {k}"},
        ]
    messages.append({"role": "user", "content": f"Question {n}{REMINDER}"})
    answer = (
        _chunk({"choices": [{"index": 0, "delta": {"content": f"Answer {n}"}}]})
        + b"data: [DONE]\n\n"
    )
    return {"model": "m", "stream": True, "messages": messages}, answer


def test_two_agents_in_one_process_are_two_sessions_of_one_thread_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that speaks Gemini as gemini-cli, then OpenAI chat as aider: neither joins the
    other's session, and aider's rewritten current message continues its thread."""
    from agentx.capture.procs import Proc
    from agentx.capture.recorder import exchange

    monkeypatch.setattr(exchange, "peer_process", lambda *a: Proc(4242, "node", "node /x/run.js"))
    path = tmp_path / "t.parquet"
    rec = Recorder(TraceWriter(path))
    t = 0
    calls = [
        (
            "/v1beta/models/g:streamGenerateContent?alt=sse",
            "GeminiCLI-tui/0.61.0/g (linux; x64)",
            *_gemini_turn(n),
        )
        for n in range(3)
    ] + [("/v1/chat/completions", "aider/0.86.2", *_aider_turn(n)) for n in range(3)]
    for i, (p, ua, body, answer) in enumerate(calls):
        key = f"k{i}"
        sse = p.endswith("completions")
        rec.process(
            RequestSent(
                key,
                t,
                t,
                "POST",
                p,
                [(b"user-agent", ua.encode())],
                orjson.dumps(body),
                ("127.0.0.1", 5555),
                "c1",
            )
        )
        ctype = "text/event-stream" if sse else "application/json"
        rec.process(ResponseHeaders(key, t + MS, 200, ctype, None))
        rec.process(ResponseData(key, t + 2 * MS, answer))
        rec.process(ResponseEnd(key, t + 3 * MS))
        t += 1000 * MS
    stats = rec.close()
    rows = sorted(read_trace(path), key=lambda e: e.timing.start_wall_ns)
    assert len(rows) == 6 and (stats.sessions, stats.threads) == (2, 2)
    gemini, aider = rows[:3], rows[3:]
    for agent, group in (("gemini-cli", gemini), ("aider", aider)):
        assert {r.agent for r in group} == {agent}
        assert len({r.session_id for r in group}) == 1 and len({r.thread_id for r in group}) == 1
        assert [r.parent_request_id for r in group] == [
            None,
            group[0].request_id,
            group[1].request_id,
        ]
        assert not {"side_call", "subagent", "fork"} & {f for r in group for f in r.flags}
    assert gemini[0].session_id != aider[0].session_id
    assert all("history_rewritten" in r.flags for r in aider[1:])
    assert all("usage_estimated" in r.flags for r in aider)
