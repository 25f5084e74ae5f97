from __future__ import annotations

import dataclasses
import tracemalloc
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from replay.factory import (
    SYSTEM,
    anthropic_session,
    chat_session,
    gemini_session,
    responses_session,
)

from agentx.apis import Api
from agentx.core.models import Response, Usage
from agentx.prefixcache.synth import hash_id_text
from agentx.workload.build import (
    BuildConfig,
    ThreadBuilder,
    dumps_body,
    max_tokens_of,
    salt_marker,
    salt_messages,
)


def cfg(**kw: Any) -> BuildConfig:
    base: dict[str, Any] = {
        "api_mode": "chat",
        "model": "m",
        "extra_body": {},
        "ignore_eos": False,
        "live": False,
    }
    base.update(kw)
    return BuildConfig(**base)


def body_of(built: Any) -> dict[str, Any]:
    return orjson.loads(built.body)  # type: ignore[no-any-return]


def test_chat_body_shape() -> None:
    ex = chat_session("s", turns=1, output_tokens=7)[0]
    built = ThreadBuilder(
        cfg(ignore_eos=True, extra_body={"temperature": 0, "max_tokens": 9}), ex.api
    ).build(ex, None)
    body = body_of(built)
    assert built.path == "/v1/chat/completions" and built.api == Api.OPENAI_CHAT
    assert body["model"] == "m" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["ignore_eos"] is True and body["min_tokens"] == 7
    assert body["temperature"] == 0 and body["max_tokens"] == 9  # --extra-body wins
    assert built.max_tokens == 9  # what the body asks for, after --extra-body


def test_same_input_same_bytes_and_prefix_stable() -> None:
    turns = chat_session("s", turns=3)
    a = [ThreadBuilder(cfg(), Api.OPENAI_CHAT).build(ex, "salt1").body for ex in turns]
    b_builder = ThreadBuilder(cfg(), Api.OPENAI_CHAT)
    b = [b_builder.build(ex, "salt1").body for ex in turns]
    assert a == b
    m0, m1 = body_of_bytes(a[0])["messages"], body_of_bytes(a[1])["messages"]
    assert m1[: len(m0)] == m0


def body_of_bytes(raw: bytes) -> dict[str, Any]:
    return orjson.loads(raw)  # type: ignore[no-any-return]


def test_salt_goes_to_first_user_message_only() -> None:
    ex = chat_session("s", turns=2)[1]
    b = ThreadBuilder(cfg(), Api.OPENAI_CHAT)
    salted = body_of(b.build(ex, "abc"))["messages"]
    plain = body_of(ThreadBuilder(cfg(), Api.OPENAI_CHAT).build(ex, None))["messages"]
    assert salted[0] == plain[0] == {"role": "system", "content": SYSTEM}  # shareable
    assert salted[1]["content"] == "[rid:abc]\n\n" + plain[1]["content"]  # as agentx-harness
    assert salted[2:] == plain[2:]


def test_salt_messages_on_block_content() -> None:
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]
    out = salt_messages(msgs, "[s] ")
    assert out[0]["content"][1] == {"type": "text", "text": "[s] hi"}
    assert msgs[0]["content"][1] == {"type": "text", "text": "hi"}  # the trace is not mutated
    assert salt_messages([{"role": "user", "content": [{"type": "image"}]}], "[s] ")[0]["content"][
        0
    ] == {
        "type": "text",
        "text": "[s] ",
    }


def test_native_anthropic_strips_provider_fields_and_sets_length() -> None:
    ex = anthropic_session("a", turns=2, output_tokens=11)[1]
    built = ThreadBuilder(cfg(api_mode="messages"), ex.api).build(ex, "z")
    body = body_of(built)
    assert built.path == "/v1/messages" and built.api == Api.ANTHROPIC_MESSAGES
    assert body["max_tokens"] == 11 and body["stream"] is True and body["model"] == "m"
    assert b"cache_control" not in built.body and b"signature" not in built.body
    assert body["messages"][0]["content"][0]["text"].startswith("[rid:z]\n\nfix the bug")
    assert "stream_options" not in body
    # without the scrub flag the captured body is sent as it is
    raw = dataclasses.replace(ex, flags=())
    assert b"cache_control" in ThreadBuilder(cfg(api_mode="native"), ex.api).build(raw, None).body


def test_max_tokens_fallbacks() -> None:
    ex = chat_session("s", turns=1)[0]
    assert max_tokens_of(dataclasses.replace(ex, usage=Usage(completion_tokens=5))) == 5
    no_usage = dataclasses.replace(ex, usage=Usage(), response=Response(text="hello world"))
    assert max_tokens_of(no_usage) == 2
    assert max_tokens_of(dataclasses.replace(no_usage, response=Response())) == 256


def test_live_mode_threads_the_server_reply() -> None:
    turns = chat_session("s", turns=3)
    b = ThreadBuilder(cfg(live=True), Api.OPENAI_CHAT)
    first = b.build(turns[0], None)
    assert not first.live_fallback
    b.live_reply({"role": "assistant", "content": "LIVE ANSWER"})
    second = body_of(b.build(turns[1], None))["messages"]
    assert second[2] == {"role": "assistant", "content": "LIVE ANSWER"}
    assert second[3]["content"].startswith("step 1")
    b.live_reply({"role": "assistant", "content": "LIVE 2"})
    third = body_of(b.build(turns[2], None))["messages"]
    assert third[:4] == second  # the history sent keeps the earlier live turn
    assert third[4] == {"role": "assistant", "content": "LIVE 2"}


def test_live_mode_keeps_recorded_tool_call_ids() -> None:
    ex = anthropic_session("a", turns=3)
    b = ThreadBuilder(cfg(live=True), Api.ANTHROPIC_MESSAGES)
    b.build(ex[0], None)
    b.live_reply(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "srv_1",
                    "type": "function",
                    "function": {"name": "Grep", "arguments": "{}"},
                },
                {
                    "id": "srv_2",
                    "type": "function",
                    "function": {"name": "Extra", "arguments": "{}"},
                },
            ],
        }
    )
    msgs = body_of(b.build(ex[1], None))["messages"]
    assistant = msgs[2]
    assert [c["id"] for c in assistant["tool_calls"]] == ["tu_0"]  # the recorded id, one call
    assert assistant["tool_calls"][0]["function"]["name"] == "Grep"  # the live call
    assert msgs[3]["tool_call_id"] == "tu_0"


def test_live_mode_falls_back_when_the_history_was_rewritten() -> None:
    turns = chat_session("s", turns=2)
    other = chat_session("x", turns=2)[1]  # not an extension of turns[0]
    b = ThreadBuilder(cfg(live=True), Api.OPENAI_CHAT)
    b.build(turns[0], None)
    b.live_reply({"role": "assistant", "content": "LIVE"})
    built = b.build(other, None)
    assert built.live_fallback
    assert b"LIVE" not in built.body


def test_strip_provider_fields_drops_markers_signatures_and_redacted_thinking() -> None:
    from agentx.apis.provider_fields import strip_provider_fields

    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
    ]
    body = {"messages": [{"role": "assistant", "content": content}], "system": "s"}
    assert strip_provider_fields(body) == {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "hi"},
                ],
            }
        ],
        "system": "s",
    }


def test_messages_carry_the_strongest_length_control_there_is() -> None:
    """/v1/messages: max_tokens, plus ignore_eos and min_tokens for servers that honour them
    (serve-sim, SGLang); vLLM 0.32 ignores those two there, and replay warns about short
    answers afterwards."""
    ex = anthropic_session("a", turns=1, output_tokens=11)[0]
    body = body_of(ThreadBuilder(cfg(api_mode="messages", ignore_eos=True), ex.api).build(ex, None))
    assert (body["max_tokens"], body["ignore_eos"], body["min_tokens"]) == (11, True, 11)
    off = body_of(ThreadBuilder(cfg(api_mode="messages"), ex.api).build(ex, None))
    assert "ignore_eos" not in off and "min_tokens" not in off


def test_native_responses_and_gemini_pin_the_length_like_the_others() -> None:
    """``ignore_eos``/``min_tokens`` go to every family's route when the server honours them
    (serve-sim on all four; vLLM drops them on /v1/responses, and Google's API would refuse
    them: replay sends them only when --ignore-eos is on, by default for known servers)."""
    for ex, key in (
        (responses_session("r", turns=1, output_tokens=13)[0], "max_output_tokens"),
        (gemini_session("g", turns=1, output_tokens=13)[0], None),
    ):
        on = body_of(ThreadBuilder(cfg(api_mode="native", ignore_eos=True), ex.api).build(ex, None))
        assert (on["ignore_eos"], on["min_tokens"]) == (True, 13)
        asked = on[key] if key else on["generationConfig"]["maxOutputTokens"]
        assert asked == 13
        off = body_of(ThreadBuilder(cfg(api_mode="native"), ex.api).build(ex, None))
        assert "ignore_eos" not in off and "min_tokens" not in off


def test_a_long_body_is_held_in_no_more_than_its_length() -> None:
    # orjson's own output of a long string sits in a buffer ~8x its length
    for mode in ("chat", "native"):
        ex = chat_session("s", turns=1)[0]
        long = {**ex.request, "messages": [{"role": "user", "content": "x" * 400_000}]}
        ex = dataclasses.replace(ex, request=long)
        builder = ThreadBuilder(cfg(api_mode=mode), ex.api)
        tracemalloc.start()
        try:
            built = builder.build(ex, "salt1")
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(built.body) > 400_000
        assert held < 1.5 * len(built.body)
        assert body_of(built)["messages"][-1]["content"].endswith("x" * 400_000)


def test_dumps_body_is_orjsons_bytes() -> None:
    for body in ({"a": 1}, {"messages": [{"role": "user", "content": "é" * 100_000}]}):
        assert dumps_body(body) == orjson.dumps(body)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 30), st.lists(st.integers(0, 10**9), max_size=12), st.integers(0, 50)
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["chat", "native"]),
    st.booleans(),
)
def test_hash_only_turns_send_their_text_held_in_the_last_body(
    turns: list[tuple[int, list[int], int]], mode: str, salted: bool
) -> None:
    """A thread's synthetic text is kept in the body it was sent in, and every turn still
    sends exactly its ids' text (a turn keeping some of the previous ids, adding others)."""
    bs = 4
    base = chat_session("s", turns=1)[0]
    builder = ThreadBuilder(cfg(api_mode=mode), base.api)
    ids: list[int] = []
    salt = "abc123" if salted else None
    for kept, added, extra in turns:
        ids = ids[: min(kept, len(ids))] + added
        n = len(ids) * bs + extra % bs if ids else extra
        ex = dataclasses.replace(
            base,
            request={},
            hash_ids=tuple(ids),
            hash_block_size=bs,
            usage=Usage(prompt_tokens=n, completion_tokens=5),
        )
        built = builder.build(ex, salt)
        content = body_of(built)["messages"][0]["content"]
        marker = salt_marker(salt) if salt else ""
        assert content == marker + hash_id_text(tuple(ids), bs, n)
        text = builder._text
        assert text is not None
        if ids:  # its full blocks' text is in the body sent, not in a copy of its own
            assert text._held is not None and not text._body
