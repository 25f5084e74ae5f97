"""vLLM's message normalisation before the chat template (agentx.prefixcache.tokenizer.chat)."""

from __future__ import annotations

from agentx.prefixcache.tokenizer import chat

STRING_TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"
PARTS_TEMPLATE = (
    "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}"
)


def test_content_format_detects_templates_that_iterate_over_parts() -> None:
    assert chat.content_format(STRING_TEMPLATE) == "string"
    assert chat.content_format(PARTS_TEMPLATE) == "openai"
    assert chat.content_format("{% for c in message['content'] %}{% endfor %}") == "openai"


def test_text_parts_are_joined_with_newlines_and_none_is_empty() -> None:
    m = chat.message(
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        "string",
    )
    assert m == {"role": "user", "content": "a\nb"}
    assert chat.message({"role": "assistant", "content": None}, "string")["content"] == ""
    parts = chat.message({"role": "user", "content": "x"}, "openai")["content"]
    assert parts == [{"type": "text", "text": "x"}]


def test_tool_call_arguments_become_objects_and_empty_calls_are_dropped() -> None:
    m = chat.message(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "g", "arguments": "not json"},
                },
                {"id": "c3", "type": "function", "function": {"name": "h", "arguments": ""}},
            ],
        },
        "string",
    )
    assert [c["function"]["arguments"] for c in m["tool_calls"]] == [{"a": 1}, {}, {}]
    assert "tool_calls" not in chat.message({"role": "assistant", "tool_calls": []}, "string")


def test_tools_are_dumped_as_vllm_models_them() -> None:
    t = {"type": "function", "function": {"name": "Read", "x-extra": 1}}
    assert chat.tool(t) == {
        "type": "function",
        "function": {"name": "Read", "description": None, "parameters": None},
    }
    strict = chat.tool({"type": "function", "function": {"name": "R", "strict": True}})
    assert strict["function"]["strict"] is True  # type: ignore[index]


def test_billing_header_line_is_dropped_from_system_text() -> None:
    m = chat.message(
        {"role": "system", "content": "x-anthropic-billing-header: cch=123\nYou are helpful."},
        "string",
    )
    assert m["content"] == "You are helpful."


def test_developer_messages_merge_into_the_system_message_when_the_template_lacks_them() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "u"},
            {"role": "developer", "content": "D"},
        ]
    }
    messages, tools = chat.conversation("openai.chat", body, STRING_TEMPLATE, None)
    assert tools is None
    assert messages == [{"role": "system", "content": "S\n\nD"}, {"role": "user", "content": "u"}]
    kept, _ = chat.conversation("openai.chat", body, STRING_TEMPLATE + "'developer'", None)
    assert [m["role"] for m in kept] == ["system", "user", "developer"]
