"""The ``prefix`` policy's stand-in for block hashes (agentx.replay.replicas): windows over a
body's prompt parts in the order an engine renders them."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.replay.replicas import WINDOW_BYTES, body_windows, engine_order

SYSTEM = "You are a coding agent. " * 200  # ~5 KB: several windows
TOOLS = [{"name": f"tool{i}", "description": "does a thing " * 20} for i in range(8)]


def anthropic(user: str) -> bytes:
    # the order a captured Anthropic body has: the conversation before the system prompt
    return orjson.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": user}],
            "system": SYSTEM,
            "tools": TOOLS,
            "max_tokens": 16,
        }
    )


def shared(a: bytes, b: bytes) -> int:
    wa, wb = body_windows(a), body_windows(b)
    n = 0
    while n < min(wa.size, wb.size) and wa[n] == wb[n]:
        n += 1
    return n


def test_new_conversations_share_their_system_prompt_and_tools() -> None:
    a, b = anthropic("fix the bug in parser.py"), anthropic("write docs for the CLI")
    assert shared(a, b) == 0  # in the body's own order the conversation leads: nothing shared
    ea = engine_order(a, Api.ANTHROPIC_MESSAGES)
    eb = engine_order(b, Api.ANTHROPIC_MESSAGES)
    prompt = len(orjson.dumps(SYSTEM)) + 1 + len(orjson.dumps(TOOLS))
    assert shared(ea, eb) >= prompt // WINDOW_BYTES


def test_a_turn_shares_what_it_re_sent() -> None:
    first = {"model": "m", "messages": [{"role": "user", "content": "x" * 5000}], "tools": TOOLS}
    later = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "y" * 9}]}
    a = engine_order(orjson.dumps(first), Api.OPENAI_CHAT)
    b = engine_order(orjson.dumps(later), Api.OPENAI_CHAT)
    assert shared(a, b) >= (len(orjson.dumps(TOOLS)) + 5000) // WINDOW_BYTES


@given(st.binary(max_size=4096))
def test_a_body_that_is_not_a_json_object_is_windowed_as_it_is(body: bytes) -> None:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        assert engine_order(body, Api.OPENAI_CHAT) == body
