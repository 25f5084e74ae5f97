from __future__ import annotations

from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.anthropic import AnthropicAssembler
from agentx.apis.openai_chat import ChatAssembler
from agentx.apis.openai_responses import ResponsesAssembler
from agentx.apis.registry import classify, max_output_tokens
from agentx.apis.sse import SSEEvent


def ev(data: Any, event: str = "message") -> SSEEvent:
    return SSEEvent(event, data if isinstance(data, str) else orjson.dumps(data).decode())


def test_classify() -> None:
    assert classify("POST", "/v1/messages?beta=true") == Api.ANTHROPIC_MESSAGES
    assert classify("POST", "/v1/messages/count_tokens") == Api.OTHER
    assert (
        classify("POST", "/openai/deployments/x/chat/completions?api-version=1") == Api.OPENAI_CHAT
    )
    assert classify("POST", "/backend-api/codex/responses") == Api.OPENAI_RESPONSES
    assert classify("GET", "/v1/responses/resp_1") == Api.OTHER
    assert classify("GET", "/v1/models") == Api.OTHER
    assert max_output_tokens({"max_output_tokens": 1}) == 1 and max_output_tokens({}) is None


def test_anthropic_stream_with_thinking_tool_and_cache_usage() -> None:
    a = AnthropicAssembler()
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "model": "claude",
                "content": [],
                "usage": {
                    "input_tokens": 5,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 200,
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"command": "l'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 's"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 42},
        },
        {"type": "message_stop"},
    ]
    tokens = [a.event(ev(e, e["type"])) for e in events]
    assert tokens.index(True) == 2  # the first thinking delta is the first generated token
    assert tokens[6] is False  # an empty input_json_delta carries nothing
    r = a.result()
    assert r.complete and r.response_id == "msg_1" and r.model == "claude"
    assert r.usage.prompt_tokens == 1205 and r.usage.cached_tokens == 1000
    assert r.usage.cache_creation_tokens == 200 and r.usage.completion_tokens == 42
    assert r.response.reasoning == "hmm" and r.response.text is None
    assert r.response.tool_calls == (
        {"id": "toolu_1", "name": "Bash", "arguments": '{"command": "ls"}'},
    )
    assert r.response.message == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
        ],
    }


def test_anthropic_error_event_and_cut_stream() -> None:
    a = AnthropicAssembler()
    a.event(ev({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}}))
    a.event(
        ev(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
    )
    a.event(
        ev(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"},
            }
        )
    )
    a.event(ev({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    r = a.result()
    assert not r.complete and r.error == "overloaded_error: Overloaded"
    assert r.response.text == "Hel" and r.usage.prompt_tokens == 3 and r.usage.cached_tokens is None
    assert r.usage.completion_tokens is None  # unknown, never 0


def test_anthropic_json_body() -> None:
    a = AnthropicAssembler()
    a.body(
        {
            "id": "m",
            "model": "c",
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 4, "output_tokens": 2},
        }
    )
    r = a.result()
    assert (
        r.complete
        and r.response.text == "hi"
        and r.usage.prompt_tokens == 4
        and r.usage.cache_creation_tokens is None
    )


def test_chat_tool_call_deltas_reasoning_and_usage_chunk() -> None:
    c = ChatAssembler()
    chunks = [
        {
            "id": "c1",
            "model": "g",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
        },
        {"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ok"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_a",
                                "type": "function",
                                "function": {"name": "read", "arguments": ""},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_b",
                                "function": {"name": "write", "arguments": "{}"},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"p":1}'}}]},
                }
            ]
        },
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 9,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        },
    ]
    flags = [c.event(ev(x)) for x in chunks]
    assert flags == [False, True, True, True, True, True, False, False, False]
    assert c.event(ev("[DONE]")) is False
    r = c.result()
    assert r.complete and r.response.text == "ok" and r.response.reasoning == "think"
    assert [t["arguments"] for t in r.response.tool_calls] == ['{"p":1}', "{}"]
    assert r.response.message["tool_calls"][0]["function"] == {
        "name": "read",
        "arguments": '{"p":1}',
    }
    assert (
        r.usage.prompt_tokens == 100
        and r.usage.cached_tokens == 64
        and r.usage.reasoning_tokens == 3
    )
    assert r.response.stop_reason == "tool_calls"


def test_chat_json_body_and_error() -> None:
    c = ChatAssembler()
    c.body(
        {
            "id": "x",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "yo"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    )
    r = c.result()
    assert r.response.text == "yo" and r.usage.cached_tokens is None and r.usage.prompt_tokens == 3
    e = ChatAssembler()
    e.body({"error": {"message": "Rate limit", "type": "rate_limit_error"}})
    assert e.result().error == "rate_limit_error: Rate limit"


def test_responses_events_and_interrupted_items() -> None:
    full = ResponsesAssembler()
    out = [
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "plan"}]},
        {
            "type": "function_call",
            "id": "fc",
            "call_id": "call_1",
            "name": "shell",
            "arguments": '{"cmd":"ls"}',
        },
        {
            "type": "custom_tool_call",
            "id": "ct",
            "call_id": "call_2",
            "name": "apply_patch",
            "input": "*** Begin Patch",
        },
    ]
    events = [
        ("response.created", {"response": {"id": "resp_1", "model": "gpt"}}),
        ("response.output_item.added", {"output_index": 0, "item": {"type": "reasoning"}}),
        ("response.reasoning_summary_text.delta", {"output_index": 0, "delta": "plan"}),
        ("response.function_call_arguments.delta", {"output_index": 1, "delta": '{"cmd"'}),
        (
            "response.completed",
            {
                "response": {
                    "id": "resp_1",
                    "status": "completed",
                    "output": out,
                    "usage": {
                        "input_tokens": 50,
                        "input_tokens_details": {"cached_tokens": 32},
                        "output_tokens": 7,
                        "output_tokens_details": {"reasoning_tokens": 4},
                    },
                }
            },
        ),
    ]
    flags = [full.event(SSEEvent(t, orjson.dumps({"type": t, **d}).decode())) for t, d in events]
    assert flags == [False, False, True, True, False]
    r = full.result()
    assert r.complete and r.response_id == "resp_1" and r.response.message == out
    assert r.response.reasoning == "plan"
    assert [c["name"] for c in r.response.tool_calls] == ["shell", "apply_patch"]
    assert (
        r.usage.prompt_tokens == 50
        and r.usage.cached_tokens == 32
        and r.usage.reasoning_tokens == 4
    )

    cut = ResponsesAssembler()
    for t, d in [
        ("response.created", {"response": {"id": "resp_2"}}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {"type": "message", "role": "assistant", "content": []}},
        ),
        ("response.output_text.delta", {"output_index": 0, "delta": "Hal"}),
        ("response.output_text.delta", {"output_index": 0, "delta": "f"}),
    ]:
        cut.event(SSEEvent(t, orjson.dumps({"type": t, **d}).decode()))
    r2 = cut.result()
    assert not r2.complete and r2.response.text == "Half" and r2.usage.prompt_tokens is None
