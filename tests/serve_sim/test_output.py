"""Answer length, tool-call choice and arguments (the filler text: tests/apis/test_answer.py;
request validation: tests/apis/test_serving.py)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.prefixcache.tokens import count_tokens
from agentx.serve_sim.output import (
    choose_tool,
    example_value,
    output_length,
    plan_output,
    token_pieces,
)

ROOM = 10_000


@pytest.mark.parametrize(
    ("max_tokens", "min_tokens", "ignore_eos", "eos", "expected"),
    [
        (1000, 0, False, 0, (1000, "length")),  # default: exactly what was asked
        (None, 0, False, 0, (256, "stop")),  # no max_tokens: --default-max-tokens
        (None, 300, False, 0, (300, "stop")),  # ... postponed by min_tokens
        (None, 0, True, 0, (ROOM, "length")),  # ignore_eos without a limit: the whole context
        (1000, 0, False, 256, (256, "stop")),  # --eos-tokens: natural end before the limit
        (100, 0, False, 256, (100, "length")),  # ... or cut by max_tokens
        (1000, 0, True, 256, (1000, "length")),  # ignore_eos runs to the limit
        (1000, 600, False, 256, (600, "stop")),  # min_tokens postpones EOS
        (500, 600, False, 256, (500, "length")),
    ],
)
def test_output_length(
    max_tokens: int | None, min_tokens: int, ignore_eos: bool, eos: int, expected: tuple[int, str]
) -> None:
    assert output_length(max_tokens, ROOM, min_tokens, ignore_eos, eos, 256) == expected


OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 5},
                    "mode": {"type": "string", "enum": ["text", "bytes"]},
                },
                "required": ["path", "limit", "mode"],
            },
        },
    },
    {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}},
]
ANTHROPIC_TOOLS = [
    {
        "name": "Read",
        "input_schema": {"type": "object", "properties": {"file": {"type": "string"}}},
    },
    {"name": "Bash", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
]


def chat(last: dict[str, object], **extra: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": "hi"}, last], "tools": OPENAI_TOOLS, **extra}


def test_auto_tool_choice_calls_after_a_user_turn_and_answers_after_a_tool_result() -> None:
    user = {"role": "user", "content": "do it"}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    assert choose_tool(Api.OPENAI_CHAT, chat(user)) == (
        "read_file",
        OPENAI_TOOLS[0]["function"]["parameters"],  # type: ignore[index]
    )
    assert choose_tool(Api.OPENAI_CHAT, chat(result)) is None
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
            }
        ],
        "tools": ANTHROPIC_TOOLS,
    }
    assert choose_tool(Api.ANTHROPIC_MESSAGES, body) is None
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    assert choose_tool(Api.ANTHROPIC_MESSAGES, body) == ("Read", ANTHROPIC_TOOLS[0]["input_schema"])


def test_a_pinned_length_wins_over_a_tool_call() -> None:
    """ignore_eos / min_tokens: the replay asked for an exact length, as vLLM would give it."""
    body = chat({"role": "user", "content": "do it"})
    free = plan_output(Api.OPENAI_CHAT, body, max_tokens=300, room=10_000)
    assert free.tool_call is not None and free.tokens < 300
    pinned = plan_output(Api.OPENAI_CHAT, body, max_tokens=300, room=10_000, ignore_eos=True)
    assert pinned.tool_call is None and (pinned.tokens, pinned.finish) == (300, "length")
    floor = plan_output(Api.OPENAI_CHAT, body, max_tokens=300, room=10_000, min_tokens=200)
    assert floor.tool_call is None and floor.tokens >= 200


def test_tool_choice_forms() -> None:
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    user = {"role": "user", "content": "x"}
    assert choose_tool(Api.OPENAI_CHAT, chat(user, tool_choice="none")) is None
    assert choose_tool(Api.OPENAI_CHAT, chat(result, tool_choice="required"))[0] == "read_file"  # type: ignore[index]
    named = {"type": "function", "function": {"name": "bash"}}
    assert choose_tool(Api.OPENAI_CHAT, chat(result, tool_choice=named))[0] == "bash"  # type: ignore[index]
    body = {"messages": [user], "tools": ANTHROPIC_TOOLS}
    assert choose_tool(Api.ANTHROPIC_MESSAGES, {**body, "tool_choice": {"type": "none"}}) is None
    pick = {"type": "tool", "name": "Bash"}
    assert choose_tool(Api.ANTHROPIC_MESSAGES, {**body, "tool_choice": pick})[0] == "Bash"  # type: ignore[index]
    assert choose_tool(Api.OPENAI_CHAT, {"messages": [user]}) is None  # no tools, no call


RESPONSES_TOOLS = [
    {"type": "web_search"},  # built in: never called
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},  # free text
    {
        "type": "function",
        "name": "shell",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {"type": "function", "name": "read", "parameters": {"type": "object"}},
]
GEMINI_TOOLS = [
    {"googleSearch": {}},
    {
        "functionDeclarations": [
            {
                "name": "run",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {"cmd": {"type": "STRING"}, "n": {"type": "INTEGER"}},
                    "required": ["cmd", "n"],
                },
            },
            {"name": "ls", "parametersJsonSchema": {"type": "object"}},
        ]
    },
]


def test_responses_tools_are_called_after_a_user_item_only() -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    output = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    body = {"input": [user], "tools": RESPONSES_TOOLS}
    assert choose_tool(Api.OPENAI_RESPONSES, body) == ("shell", RESPONSES_TOOLS[2]["parameters"])
    assert choose_tool(Api.OPENAI_RESPONSES, {**body, "input": "a plain string"}) is not None
    assert choose_tool(Api.OPENAI_RESPONSES, {**body, "input": [user, output]}) is None
    assert choose_tool(Api.OPENAI_RESPONSES, {**body, "tool_choice": "none"}) is None
    named = {"type": "function", "name": "read"}
    assert choose_tool(Api.OPENAI_RESPONSES, {**body, "tool_choice": named})[0] == "read"  # type: ignore[index]
    only_builtin = {"input": [user], "tools": RESPONSES_TOOLS[:2]}
    assert choose_tool(Api.OPENAI_RESPONSES, only_builtin) is None


def test_gemini_function_declarations_and_calling_modes() -> None:
    user = {"role": "user", "parts": [{"text": "go"}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "run", "response": {}}}]}
    body = {"contents": [user], "tools": GEMINI_TOOLS}
    name, schema = choose_tool(Api.GEMINI, body)  # type: ignore[misc]
    assert name == "run" and example_value(schema) == {"cmd": "agentx", "n": 1}  # OBJECT, STRING
    assert choose_tool(Api.GEMINI, {**body, "contents": [user, answer]}) is None

    def mode(config: dict[str, object]) -> str | None:
        got = choose_tool(Api.GEMINI, {**body, "toolConfig": {"functionCallingConfig": config}})
        return None if got is None else got[0]

    assert mode({"mode": "NONE"}) is None
    assert mode({"mode": "AUTO"}) == "run"
    assert mode({"mode": "ANY", "allowedFunctionNames": ["ls"]}) == "ls"
    assert (
        choose_tool(
            Api.GEMINI,
            {
                "contents": [user, answer],
                "tools": GEMINI_TOOLS,
                "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            },
        )[0]
        == "run"
    )  # type: ignore[index]


def test_tool_arguments_follow_the_schema() -> None:
    schema = OPENAI_TOOLS[0]["function"]["parameters"]  # type: ignore[index]
    assert example_value(schema) == {"path": "agentx", "limit": 5, "mode": "text"}
    nested = {
        "type": "object",
        "properties": {
            "xs": {"type": "array", "items": {"type": "number"}},
            "flag": {"type": ["boolean", "null"]},
            "opt": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "d": {"type": "string", "default": "dflt"},
        },
    }
    assert example_value(nested) == {"xs": [1.0], "flag": True, "opt": 1, "d": "dflt"}


def test_a_tool_plan_streams_its_arguments_token_by_token() -> None:
    plan = plan_output(
        Api.OPENAI_CHAT,
        chat({"role": "user", "content": "go"}),
        max_tokens=100,
        room=ROOM,
        call_id="call_1",
    )
    assert plan.finish == "tool" and plan.tool_call is not None
    assert "".join(plan.tool_call.pieces) == plan.tool_call.arguments
    assert orjson.loads(plan.tool_call.arguments)["path"] == "agentx"
    assert plan.tokens == count_tokens(plan.tool_call.arguments)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_token_pieces_reassemble(text: str) -> None:
    assert "".join(token_pieces(text)) == text


# -- validation ---------------------------------------------------------------------------------
