"""Orphaned tool calls / results: detection and unambiguous repair, per API family."""

from __future__ import annotations

import copy

from agentx.apis import Api
from agentx.scrub.toolpairs import check


def chat_call(cid: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_paired_chat_conversation_is_ok() -> None:
    conv = [
        {"role": "user", "content": "go"},
        chat_call("a"),
        {"role": "tool", "tool_call_id": "a", "content": "1"},
    ]
    assert check(Api.OPENAI_CHAT, conv).ok


def test_chat_orphan_result_is_removed_and_input_untouched() -> None:
    conv = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "zz", "content": "1"},
        {"role": "user", "content": "more"},
    ]
    before = copy.deepcopy(conv)
    c = check(Api.OPENAI_CHAT, conv)
    assert (c.orphan_results, c.unanswered_calls) == (1, 0)
    assert c.repaired == [conv[0], conv[2]]
    assert conv == before


def test_chat_unanswered_call_is_removed_keeping_the_text() -> None:
    conv = [
        {"role": "user", "content": "go"},
        chat_call("a"),
        {"role": "user", "content": "never mind"},
    ]
    c = check(Api.OPENAI_CHAT, conv)
    assert c.unanswered_calls == 1
    assert c.repaired is not None
    assert c.repaired[1] == {"role": "assistant", "content": "calling"}


def test_last_message_call_is_not_an_orphan() -> None:
    conv = [{"role": "user", "content": "go"}, chat_call("a")]
    assert check(Api.OPENAI_CHAT, conv).ok


def test_anthropic_orphan_block_removed_when_the_message_keeps_content() -> None:
    conv = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "gone", "content": "x"},
                {"type": "text", "text": "and this"},
            ],
        },
    ]
    c = check(Api.ANTHROPIC_MESSAGES, conv)
    assert c.repaired is not None
    assert c.repaired[2] == {"role": "user", "content": [{"type": "text", "text": "and this"}]}


def test_anthropic_repair_that_would_empty_a_message_is_ambiguous() -> None:
    conv = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}],
        },
    ]
    c = check(Api.ANTHROPIC_MESSAGES, conv)
    assert not c.ok and c.repaired is None


def test_responses_items_are_paired_by_call_id() -> None:
    conv = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "function_call_output", "call_id": "c9", "output": "stale"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]},
    ]
    c = check(Api.OPENAI_RESPONSES, conv)
    assert c.orphan_results == 1
    assert c.repaired == conv[:3] + conv[4:]


def test_repair_is_deterministic_across_requests_of_a_thread() -> None:
    base = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "zz", "content": "1"},
        {"role": "user", "content": "more"},
    ]
    longer = [
        *base,
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    a, b = check(Api.OPENAI_CHAT, base).repaired, check(Api.OPENAI_CHAT, longer).repaired
    assert a is not None and b is not None and b[: len(a)] == a
