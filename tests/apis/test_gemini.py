"""Gemini generateContent: routing, the assembler, usage, conversion to chat, native replay."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.apis.gemini import GeminiAssembler, model_from_path
from agentx.apis.registry import classify, family, max_output_tokens
from agentx.apis.sse import SSEEvent
from agentx.apis.translate import ThreadConverter, to_chat
from agentx.apis.usage import usage_from
from agentx.core.models import Usage

STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


def chunk(parts: list[dict[str, Any]], finish: str | None = None, **usage: int) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-2.5-pro"}
    if usage:
        out["usageMetadata"] = usage
    out["responseId"] = "resp-1"
    return out


def ev(obj: Any) -> SSEEvent:
    return SSEEvent("message", orjson.dumps(obj).decode())


def test_routing_and_model_from_path() -> None:
    assert classify("POST", STREAM) == Api.GEMINI
    assert classify("POST", "/v1beta/models/gemini-2.5-flash:generateContent") == Api.GEMINI
    vertex = "/v1/projects/p/locations/us/publishers/google/models/gemini-2.5-pro:generateContent"
    assert classify("POST", vertex) == Api.GEMINI
    assert classify("POST", "/v1beta/models/gemini-2.5-pro:countTokens") == Api.OTHER
    assert classify("GET", "/v1beta/models") == Api.OTHER
    assert model_from_path(STREAM) == "gemini-2.5-pro"
    assert model_from_path(vertex) == "gemini-2.5-pro"
    assert model_from_path("/v1/chat/completions") is None
    assert max_output_tokens({"generationConfig": {"maxOutputTokens": 1}}) == 1
    assert max_output_tokens({"generationConfig": {"temperature": 1}}) is None


def test_stream_with_thoughts_function_calls_and_usage() -> None:
    asm = GeminiAssembler()
    tokens = [
        asm.event(ev(chunk([{"text": "Let me ", "thought": True}], promptTokenCount=900))),
        asm.event(ev(chunk([{"text": "look.", "thought": True}]))),
        asm.event(ev(chunk([{"text": "I will run "}]))),
        asm.event(ev(chunk([{"text": "ls."}]))),
        asm.event(
            ev(
                chunk(
                    [
                        {
                            "functionCall": {
                                "name": "run_shell_command",
                                "args": {"command": "ls"},
                            },
                            "thoughtSignature": "c2ln",
                        }
                    ],
                    "STOP",
                    promptTokenCount=1000,
                    cachedContentTokenCount=800,
                    candidatesTokenCount=20,
                    thoughtsTokenCount=7,
                    totalTokenCount=1027,
                )
            )
        ),
    ]
    assert tokens == [True, True, True, True, True]
    res = asm.result()
    assert res.complete and res.model == "gemini-2.5-pro" and res.response_id == "resp-1"
    r = res.response
    assert (r.reasoning, r.text, r.stop_reason) == ("Let me look.", "I will run ls.", "STOP")
    assert r.tool_calls == (
        {"id": None, "name": "run_shell_command", "arguments": '{"command":"ls"}'},
    )
    assert r.message == {
        "role": "model",
        "parts": [
            {"text": "Let me look.", "thought": True},
            {"text": "I will run ls."},
            {
                "functionCall": {"name": "run_shell_command", "args": {"command": "ls"}},
                "thoughtSignature": "c2ln",
            },
        ],
    }
    assert res.usage == Usage(
        prompt_tokens=1000, cached_tokens=800, completion_tokens=27, reasoning_tokens=7
    )


def test_cut_stream_error_and_json_bodies() -> None:
    asm = GeminiAssembler()
    asm.event(ev(chunk([{"text": "partial"}])))
    res = asm.result()
    assert not res.complete and res.response.text == "partial"  # no finishReason: cut

    asm = GeminiAssembler()
    asm.body({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
    assert asm.result().error == "429: quota"

    asm = GeminiAssembler()  # :streamGenerateContent without alt=sse: a JSON array
    asm.body([chunk([{"text": "a"}]), chunk([{"text": "b"}], "STOP", promptTokenCount=3)])
    res = asm.result()
    assert res.complete and res.response.text == "ab" and res.usage.prompt_tokens == 3

    asm = GeminiAssembler()  # a refused prompt has no candidate
    asm.body(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}}
    )
    res = asm.result()
    assert res.complete and res.response.stop_reason == "SAFETY" and res.response.text is None


COUNT = st.none() | st.integers(min_value=0, max_value=10**7) | st.booleans()
GEMINI_USAGE = st.fixed_dictionaries(
    {},
    optional={
        k: COUNT
        for k in (
            "promptTokenCount",
            "cachedContentTokenCount",
            "candidatesTokenCount",
            "thoughtsTokenCount",
            "toolUsePromptTokenCount",
        )
    },
)


@settings(max_examples=150, deadline=None)
@given(GEMINI_USAGE)
def test_usage_reads_the_same_in_capture_and_replay(usage: dict[str, Any]) -> None:
    events = [chunk([{"text": "hi"}]), {**chunk([], "STOP"), "usageMetadata": usage}]
    asm = GeminiAssembler()
    parser = family(Api.GEMINI).stream_parser(False)
    for obj in events:
        asm.event(ev(obj))
        parser.feed(b"data: " + orjson.dumps(obj) + b"\r\n\r\n", 1)
    u = asm.result().usage
    assert u == usage_from(Api.GEMINI, usage)
    if any(isinstance(v, int) and not isinstance(v, bool) for v in usage.values()):
        assert (parser.prompt_tokens, parser.completion_tokens, parser.cached_tokens) == (
            u.prompt_tokens,
            u.completion_tokens,
            u.cached_tokens,
        )
    assert parser.done and parser.first_token_ns == 1


BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "<context/>"}, {"text": "Fix it."}]},
        {
            "role": "model",
            "parts": [
                {"text": "hmm", "thought": True},
                {"text": "Reading."},
                {"functionCall": {"name": "read_file", "args": {"path": "a"}, "id": "x-1"}},
                {"functionCall": {"name": "read_file", "args": {"path": "b"}}},
                {"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "sig"},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "A"},
                        "id": "x-1",
                    }
                },
                {"functionResponse": {"name": "read_file", "response": {"output": "B"}}},
                {"functionResponse": {"name": "ls", "response": {"files": ["a", "b"]}}},
            ],
        },
        {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
    ],
    "systemInstruction": {"role": "user", "parts": [{"text": "You are an agent."}]},
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "description": "read",
                    "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}},
                },
                {"name": "ls", "parametersJsonSchema": {"type": "object"}},
            ]
        },
        {"googleSearch": {}},
    ],
    "generationConfig": {"maxOutputTokens": 100},
}


def test_gemini_to_chat() -> None:
    messages, tools = to_chat(Api.GEMINI, BODY)
    calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": f, "arguments": a}}
        for n, f, a in (
            ("read_file_0", "read_file", '{"path":"a"}'),
            ("read_file_1", "read_file", '{"path":"b"}'),
            ("ls_0", "ls", "{}"),
        )
    ]
    assert messages == [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "<context/>\nFix it."},
        {"role": "assistant", "content": "Reading.", "tool_calls": calls},
        {"role": "tool", "content": "A", "tool_call_id": "call_read_file_0"},
        {"role": "tool", "content": "B", "tool_call_id": "call_read_file_1"},
        {"role": "tool", "content": '{"files":["a","b"]}', "tool_call_id": "call_ls_0"},
        {"role": "user", "content": "[image]"},
    ]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "read",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        },
        {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}},
    ]
    # the thread converter gives the same messages, turn after turn
    conv = ThreadConverter(Api.GEMINI)
    first = {**BODY, "contents": BODY["contents"][:1]}
    assert conv.convert(first) == to_chat(Api.GEMINI, first)
    assert conv.convert(BODY) == (messages, tools)


@pytest.mark.parametrize("salt", [None, "s1"])
def test_native_gemini_body(salt: str | None) -> None:
    from agentx.core.models import Exchange, Timing
    from agentx.workload.build import BuildConfig, ThreadBuilder

    ex = Exchange(
        request_id="r",
        session_id="s",
        thread_id="t",
        api=Api.GEMINI,
        request=BODY,
        timing=Timing(start_wall_ns=0),
        path=STREAM,
        usage=Usage(completion_tokens=42),
        flags=("provider_fields",),
    )
    cfg = BuildConfig(api_mode="native", model="m-1", extra_body={}, ignore_eos=False, live=False)
    built = ThreadBuilder(cfg, Api.GEMINI).build(ex, salt)
    body = orjson.loads(built.body)
    assert built.api == Api.GEMINI and built.max_tokens == 42
    assert built.path == "/v1beta/models/m-1:streamGenerateContent?alt=sse"
    assert body["generationConfig"] == {"maxOutputTokens": 42}
    assert "model" not in body and "stream" not in body
    assert b"thoughtSignature" not in built.body  # provider-only: stripped
    first = body["contents"][0]["parts"][0]["text"]
    assert first == ("[rid:s1]\n\n<context/>" if salt else "<context/>")
