"""Real mitmproxy, real sockets: the Responses API over a WebSocket (Codex
``supports_websockets``) and Gemini ``generateContent`` (gemini-cli), each multi-turn."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
from upstream import Upstream, usage_for

from agentx.apis import Api
from agentx.capture.runner import Capture
from agentx.store import read_trace

KEY = "sk-proj-TESTsecretKEYwebsocket0001"
GEMINI_KEY = "AIzaTESTsecretGEMINIkey0002"
TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]


async def _websocket_session(url: str, chain: bool) -> list[list[dict[str, Any]]]:
    """Three turns over one WebSocket; each turn sends only the new items after the first when
    ``chain`` (``previous_response_id``), the whole input otherwise. The events of each turn."""
    turns: list[list[dict[str, Any]]] = []
    items: list[Any] = [{"role": "user", "content": "Fix the bug."}]
    new = list(items)
    prev: str | None = None
    headers = {"authorization": f"Bearer {KEY}", "session_id": "ws-session-1"}
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(url + "/v1/responses", headers=headers) as ws,
    ):
        for _turn in range(3):
            body: dict[str, Any] = {
                "type": "response.create",
                "model": "gpt-test",
                "input": new if chain else items,
                "tools": TOOLS,
                "stream": True,
            }
            if chain and prev is not None:
                body["previous_response_id"] = prev
            await ws.send_str(orjson.dumps(body).decode())
            events: list[dict[str, Any]] = []
            while True:
                msg = await ws.receive(timeout=10)
                event = orjson.loads(msg.data)
                events.append(event)
                if event["type"] == "response.completed":
                    break
            turns.append(events)
            final = events[-1]["response"]
            prev = final["id"]
            new = []
            for out in final["output"]:
                items.append(out)
                if out["type"] == "function_call":
                    result = {"type": "function_call_output", "call_id": out["call_id"]}
                    result["output"] = "ok"
                    new.append(result)
            items.extend(new)
    return turns


def test_responses_over_websocket(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url)
    ws_url = cap.url.replace("http://", "ws://")
    chained = asyncio.run(_websocket_session(ws_url, chain=True))
    full = asyncio.run(_websocket_session(ws_url, chain=False))
    assert [len(t) for t in chained] == [len(t) for t in full]
    stats = cap.close()
    assert stats.requests == 6 and stats.partial == 0

    trace = sorted(read_trace(tmp_path / "trace.parquet"), key=lambda e: e.timing.start_wall_ns)
    model = [r for r in trace if r.api == Api.OPENAI_RESPONSES]
    upgrades = [r for r in trace if r.api == Api.OTHER]
    assert len(model) == 6 and len(upgrades) == 2  # the two GET upgrades, non_model rows
    assert all(r.method == "WS" and r.path == "/v1/responses" for r in model)
    assert {r.session_id for r in model} == {"ws-session-1"}
    for rows in (model[:3], model[3:]):
        assert len({r.thread_id for r in rows}) == 1
        for prev, cur in itertools.pairwise(rows):
            assert cur.parent_request_id == prev.request_id and cur.think_time_s is not None
    # the chained socket sent only new items: capture resolved them into the whole input
    assert [r.flags for r in model[1:3]] == [("previous_response_resolved",)] * 2
    for a, b in zip(model[:3], model[3:], strict=True):

        def shape(items: list[Any]) -> list[Any]:
            return [(i.get("type"), i.get("role"), i.get("content")) for i in items]

        assert shape(a.request["input"]) == shape(b.request["input"])
        assert "type" not in a.request  # the request body, without the message's "type"
    # the streamed events were assembled like the HTTP form's
    for turn, row in enumerate(model[:3]):
        u = usage_for(turn)
        assert row.usage.prompt_tokens == u["input"] + u["cache_read"]
        assert row.usage.cached_tokens == u["cache_read"]
        assert row.usage.completion_tokens == u["output"]
        assert row.response.text and row.timing.ttft_ns is not None
        assert row.timing.ttfb_ns is not None and row.timing.ttfb_ns <= row.timing.ttft_ns
        assert len(row.timing.chunk_offsets_ns) == len(chained[turn])
    assert [len(r.response.tool_calls) for r in model[:3]] == [1, 1, 0]
    raw = (tmp_path / "trace.parquet").read_bytes()
    assert KEY.encode() not in raw


def _gemini_turns(url: str, path: str, prompt: str, key_in_query: bool = False) -> int:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": prompt}]}]
    tools = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}]
    headers = {} if key_in_query else {"x-goog-api-key": GEMINI_KEY}
    query = f"&key={GEMINI_KEY}" if key_in_query else ""
    calls = 0
    with httpx.Client(timeout=10) as client:
        for _turn in range(3):
            body = {
                "contents": contents,
                "systemInstruction": {"parts": [{"text": "You are an agent."}]},
                "tools": tools,
                "generationConfig": {"maxOutputTokens": 64},
            }
            r = client.post(f"{url}{path}{query}", json=body, headers=headers)
            assert r.status_code == 200
            calls += 1
            if path.endswith("alt=sse"):
                chunks = [
                    orjson.loads(line[6:])
                    for line in r.text.splitlines()
                    if line.startswith("data: ")
                ]
            else:
                chunks = [r.json()]
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
            contents.append({"role": "model", "parts": parts})
            answers = [
                {
                    "functionResponse": {
                        "name": p["functionCall"]["name"],
                        "response": {"output": "ok"},
                    }
                }
                for p in parts
                if "functionCall" in p
            ]
            if not answers:
                break
            contents.append({"role": "user", "parts": answers})
    return calls


def test_gemini_streamed_and_not(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url)
    streamed = _gemini_turns(
        cap.url, "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", "Fix the bug."
    )
    whole = _gemini_turns(
        cap.url, "/v1beta/models/gemini-test:generateContent?x=1", "Add a test.", True
    )
    assert streamed == whole == 3
    cap.close()
    trace = sorted(read_trace(tmp_path / "trace.parquet"), key=lambda e: e.timing.start_wall_ns)
    assert [r.api for r in trace] == [Api.GEMINI] * 6
    for rows in (trace[:3], trace[3:]):
        assert len({r.thread_id for r in rows}) == 1
        for prev, cur in itertools.pairwise(rows):
            assert cur.parent_request_id == prev.request_id
        for turn, row in enumerate(rows):
            u = usage_for(turn)
            assert row.model == "gemini-test"
            assert row.usage.prompt_tokens == u["input"] + u["cache_read"]
            assert row.usage.cached_tokens == u["cache_read"]
            assert row.usage.completion_tokens == u["output"] + 2  # candidates + thoughts
            assert row.usage.reasoning_tokens == 2
            assert row.response.reasoning == "Thinking it over."
            assert row.response.text and row.response.text.startswith(f"Step {turn}") == (turn < 2)
            assert row.timing.ttft_ns is not None
        assert [len(r.response.tool_calls) for r in rows] == [1, 1, 0]
        assert rows[0].response.tool_calls[0]["name"] == "run_shell_command"
    assert "key=REDACTED" in trace[3].path and not trace[0].flags
    raw = (tmp_path / "trace.parquet").read_bytes()
    assert GEMINI_KEY.encode() not in raw
