"""The agent table against the recorded requests of each real agent (one fixture per agent,
made by ``scripts/agents/run_agents.sh --fixtures``): identity, session id, and the threads a
capture of the same requests builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentx.apis import Api
from agentx.apis.registry import classify
from agentx.capture.agents import AGENT_NAMES, AGENTS, detect_agent, session_header
from agentx.capture.credentials import Secrets
from agentx.capture.recorder import Recorder
from agentx.capture.recorder.events import RequestSent, ResponseData, ResponseEnd, ResponseHeaders
from agentx.store import TraceWriter, read_trace

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
PATHS = sorted(FIXTURES.glob("*.json"))
# the process command line of agents that send nothing of their own (pi's OpenAI-compatible
# providers send the OpenAI JS SDK's User-Agent, aider the Python SDK's)
PROCESSES = {
    "pi": "node /home/u/.npm-global/bin/pi -p x",
    "aider": "/home/u/.venv/bin/python3 /home/u/.venv/bin/aider --model openai/x",
    # cline's requests come from its hub daemon (the AI SDK's User-Agent)
    "cline": "/u/node_modules/@cline/cli-linux-x64/bin/cline --cline-hub-daemon --port 25463",
}
# agents that send one (a run whose model delegates to a task subagent: two, the subagent's own)
SESSION_IDS = {"claude-code", "codex", "opencode", "kilo"}
VARIANTS = ("-ws", "-task")  # the same agent over WebSocket, or delegating to a subagent


def agent_of(fixture: str) -> str:
    for suffix in VARIANTS:
        fixture = fixture.removesuffix(suffix)
    return fixture


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def lower(headers: list[list[str]]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers}


def test_every_agent_has_a_fixture() -> None:
    names = {load(p)["agent"] for p in PATHS}
    wanted = {
        "claude-code",
        "codex",
        "gemini-cli",
        "qwen-code",
        "opencode",
        "opencode-task",
        "kilo",
        "kilo-task",
        "cline",
        "pi",
        "aider",
    }
    assert wanted <= names, f"missing fixtures: {wanted - names}"
    assert {agent_of(n) for n in names} <= set(AGENT_NAMES)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_identity_and_session(path: Path) -> None:
    fx = load(path)
    agent = agent_of(fx["agent"])
    sessions = set()
    for req in fx["requests"]:
        method = "POST" if req["method"] == "WS" else req["method"]
        if classify(method, req["path"]) == Api.OTHER:
            continue  # the Bun runtime's connectivity probe: no key, Bun's User-Agent
        headers = lower(req["headers"])
        assert "REDACTED" in {
            headers.get("authorization"),
            headers.get("x-api-key"),
            headers.get("x-goog-api-key"),
        }
        if agent in PROCESSES:
            assert detect_agent(headers) is None  # nothing on the wire says who it is
            assert detect_agent(headers, PROCESSES[agent]) == agent
        else:
            assert detect_agent(headers) == agent
            assert detect_agent(headers, "/usr/bin/python3 other.py") == agent
        sessions.add(session_header(headers))
    if agent in SESSION_IDS and fx["agent"].endswith("-task"):
        assert len(sessions) == 2 and None not in sessions  # the caller's, the subagent's
    elif agent in SESSION_IDS:
        (sid,) = sessions
        assert sid  # one session id, sent on every request (Kilo's title call: prefixed)
    else:
        assert sessions == {None}


def test_process_names() -> None:
    assert detect_agent({}, "node /x/node_modules/@google/gemini-cli/bundle/gemini.js -p") == (
        "gemini-cli"
    )
    assert detect_agent({}, "/x/.bin/claude -p hi") == "claude-code"
    assert detect_agent({}, "node --max-old-space-size=8192 /x/bin/opencode run") == "opencode"
    assert detect_agent({}, "/usr/bin/python3 -m pip install pi") is None
    pi_dist = "node /u/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js -p x"
    assert detect_agent({}, pi_dist) == "pi"
    assert detect_agent({"user-agent": "OpenAI/Python 2.20.0"}) is None
    assert detect_agent({}, "/u/node_modules/@cline/cli-linux-x64/bin/cline hi") == "cline"
    kilo = "/u/node_modules/@kilocode/cli-linux-x64/bin/kilo run hi"
    assert detect_agent({}, kilo) == "kilo"
    # Kilo's own requests that carry opencode's User-Agent are Kilo's: the process says
    assert detect_agent({"user-agent": "opencode/7.7.7"}, kilo) == "kilo"
    assert detect_agent({"user-agent": "opencode/1.18.33"}) == "opencode"
    assert detect_agent({"user-agent": "Kilo-Code/7.7.7 ai-sdk/provider-utils/4.0.27"}) == "kilo"
    assert len({a.name for a in AGENTS}) == len(AGENTS)


def _answer(api: str, answer: dict[str, Any]) -> bytes:
    """The recorded answer as a whole JSON body of the request's API family."""
    text = answer["text"] or ""
    calls = answer["tool_calls"]
    u = answer["usage"]
    if api == Api.OPENAI_CHAT:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        body: dict[str, Any] = {"id": "x", "choices": [{"index": 0, "message": message}]}
        if u:
            body["usage"] = {
                "prompt_tokens": u["prompt_tokens"],
                "completion_tokens": u["completion_tokens"],
            }
    elif api == Api.ANTHROPIC_MESSAGES:
        content: list[Any] = [{"type": "text", "text": text}]
        content += [
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["name"],
                "input": orjson.loads(c["arguments"] or "{}"),
            }
            for c in calls
        ]
        body = {"id": "m", "type": "message", "content": content, "stop_reason": "end_turn"}
        body["usage"] = {
            "input_tokens": u["prompt_tokens"] - (u["cached_tokens"] or 0),
            "cache_read_input_tokens": u["cached_tokens"] or 0,
            "output_tokens": u["completion_tokens"],
        }
    elif api == Api.OPENAI_RESPONSES:
        output: list[Any] = [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        ]
        output += [
            {
                "type": "function_call",
                "call_id": c["id"],
                "name": c["name"],
                "arguments": c["arguments"],
            }
            for c in calls
        ]
        body = {
            "id": answer.get("response_id") or "resp_unreferenced",
            "status": "completed",
            "output": output,
            "usage": {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"]},
        }
    else:
        assert api == Api.GEMINI
        parts: list[Any] = [{"text": text}] if text else []
        parts += [
            {"functionCall": {"name": c["name"], "args": orjson.loads(c["arguments"] or "{}")}}
            for c in calls
        ]
        body = {
            "candidates": [
                {"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": parts}}
            ],
            "usageMetadata": {
                "promptTokenCount": u["prompt_tokens"],
                "candidatesTokenCount": u["completion_tokens"],
            },
        }
    return orjson.dumps(body)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_a_capture_of_the_recorded_requests_threads_them_as_the_real_run(
    path: Path, tmp_path: Path
) -> None:
    fx = load(path)
    agent = agent_of(fx["agent"])
    rec = Recorder(TraceWriter(tmp_path / "t.parquet"), secrets=Secrets(), resolve_processes=False)
    t = 1_000_000_000
    ids: list[str] = []
    for i, req in enumerate(fx["requests"]):
        headers = [(k, v) for k, v in req["headers"]]
        method = "POST" if req["method"] == "WS" else req["method"]
        api = classify(method, req["path"])
        key = f"k{i}"
        ids.append(key)
        raw = orjson.dumps(req["body"]) if req["body"] is not None else b""
        rec.process(RequestSent(key, t, t, method, req["path"], headers, raw, None, "c"))
        status = req["status"] or 200
        ctype = "application/json"
        rec.process(ResponseHeaders(key, t + 1000, status, ctype, None))
        if api != Api.OTHER:
            rec.process(ResponseData(key, t + 2000, _answer(api, req["answer"])))
        rec.process(ResponseEnd(key, t + 3000))
        t += 500_000_000
    rec.close()
    rows = sorted(read_trace(tmp_path / "t.parquet"), key=lambda e: e.timing.start_wall_ns)
    assert len(rows) == len(fx["requests"])
    index = {r.request_id: i for i, r in enumerate(rows)}
    threads: dict[str, int] = {}
    for row, req in zip(rows, fx["requests"], strict=True):
        want = req["expected"]
        got = {
            "thread": threads.setdefault(row.thread_id, len(threads)) if row.thread_id else None,
            "parent": index.get(row.parent_request_id or ""),
            "flags": [f for f in row.flags if not f.startswith("replaced_chars=")],
        }
        assert got == {k: want[k] for k in got}, row.path
        if row.api != Api.OTHER:
            assert row.usage.prompt_tokens and row.usage.completion_tokens is not None
    agents = {r.agent for r in rows if r.api != Api.OTHER}
    assert agents == {None if agent in PROCESSES else agent}
    # one agent run, one session: a task subagent's and a title call's own ids join it
    assert len({r.session_id for r in rows if r.api != Api.OTHER}) == 1
    if fx["agent"].endswith("-task"):
        (sub,) = [r for r in rows if "subagent" in r.flags]
        spawner = rows[index[sub.parent_request_id or ""]]
        assert spawner.thread_id != sub.thread_id and spawner.response.tool_calls
        assert sub.think_time_s is not None  # the spawn gap
