from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from replay.factory import anthropic_session

from agentx.apis import Api
from agentx.apis.translate import ThreadConverter, to_chat


def test_anthropic_to_chat() -> None:
    ex = anthropic_session("a", turns=2)[1]
    messages, tools = to_chat(Api.ANTHROPIC_MESSAGES, ex.request)
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith(
        "You are a careful"
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assistant = messages[2]
    assert assistant["content"] == "let me read it"  # thinking block dropped
    assert assistant["tool_calls"] == [
        {
            "id": "tu_0",
            "type": "function",
            "function": {"name": "Read", "arguments": '{"path":"a.py"}'},
        }
    ]
    assert messages[3] == {"role": "tool", "content": "file text " * 20, "tool_call_id": "tu_0"}
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "Read",
                "description": "read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    blob = orjson.dumps([messages, tools])
    assert b"cache_control" not in blob and b"signature" not in blob


def test_anthropic_tool_results_come_before_text() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "out"}],
                    },
                    {"type": "image", "source": {}},
                ],
            }
        ]
    }
    messages, _ = to_chat(Api.ANTHROPIC_MESSAGES, body)
    assert messages == [
        {"role": "tool", "content": "out", "tool_call_id": "t1"},
        {"role": "user", "content": "first\n[image]"},
    ]


def test_responses_to_chat_merges_function_calls() -> None:
    body = {
        "instructions": "be brief",
        "tools": [
            {"type": "function", "name": "shell", "parameters": {"type": "object"}},
            {"type": "web_search"},
        ],
        "input": [
            {"role": "developer", "content": "rules"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "encrypted_content": "xx", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "shell",
                "arguments": '{"cmd":"ls"}',
            },
            {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        ],
    }
    messages, tools = to_chat(Api.OPENAI_RESPONSES, body)
    assert [m["role"] for m in messages] == ["system", "system", "user", "assistant", "tool"]
    assert messages[3]["content"] == "ok"
    assert [c["id"] for c in messages[3]["tool_calls"]] == ["c1", "c2"]
    assert [t["function"]["name"] for t in tools] == ["shell"]


def test_chat_content_parts_become_strings() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "x", "content": "r", "cache_control": {}},
        ]
    }
    messages, _ = to_chat(Api.OPENAI_CHAT, body)
    assert messages == [
        {"role": "user", "content": "a\n[image]"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": "r", "tool_call_id": "x"},
    ]


text = st.text(max_size=20)
block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.builds(lambda i, t: {"type": "tool_result", "tool_use_id": i, "content": t}, text, text),
    st.builds(lambda i, n: {"type": "tool_use", "id": i, "name": n, "input": {"k": n}}, text, text),
)
message = st.builds(
    lambda role, content: {"role": role, "content": content},
    st.sampled_from(["user", "assistant"]),
    st.one_of(text, st.lists(block, max_size=4)),
)


@given(st.lists(message, min_size=1, max_size=12), st.data())
def test_conversion_is_deterministic_and_prefix_stable(
    msgs: list[dict[str, Any]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(msgs)))
    body = {"system": "sys", "messages": msgs}
    earlier = {"system": "sys", "messages": msgs[:cut]}
    a = orjson.dumps(to_chat(Api.ANTHROPIC_MESSAGES, body))
    assert a == orjson.dumps(to_chat(Api.ANTHROPIC_MESSAGES, orjson.loads(orjson.dumps(body))))
    full, _ = to_chat(Api.ANTHROPIC_MESSAGES, body)
    head, _ = to_chat(Api.ANTHROPIC_MESSAGES, earlier)
    assert full[: len(head)] == head  # an appended conversation appends messages
    # the incremental converter agrees with the one-shot conversion, turn after turn
    conv = ThreadConverter(Api.ANTHROPIC_MESSAGES)
    assert conv.convert(earlier) == to_chat(Api.ANTHROPIC_MESSAGES, earlier)
    assert conv.convert(body) == to_chat(Api.ANTHROPIC_MESSAGES, body)
