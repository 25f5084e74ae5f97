"""agentx.apis.usage: every family's usage block -> Usage, and capture and replay read it alike."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.apis.registry import family
from agentx.apis.sse import SSEEvent
from agentx.apis.usage import usage_from
from agentx.apis.usage_counts import cached_from_usage, merge_usage
from agentx.core.models import Usage

CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, Usage]] = [
    (  # OpenAI Chat Completions, vLLM with --enable-prompt-tokens-details
        Api.OPENAI_CHAT,
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 5},
        },
        None,
        Usage(prompt_tokens=100, cached_tokens=64, completion_tokens=20, reasoning_tokens=5),
    ),
    (  # vLLM without prompt tokens details: cached is unknown, not 0
        Api.OPENAI_CHAT,
        {"prompt_tokens": 100, "completion_tokens": 20},
        None,
        Usage(prompt_tokens=100, completion_tokens=20),
    ),
    (  # SGLang HiCache: cached tokens per tier
        Api.OPENAI_CHAT,
        {
            "prompt_tokens": 90,
            "completion_tokens": 3,
            "cached_tokens_details": {"device": 30, "host": 12},
        },
        None,
        Usage(prompt_tokens=90, cached_tokens=42, completion_tokens=3),
    ),
    (  # SGLang, tiers inside prompt_tokens_details
        Api.OPENAI_CHAT,
        {"prompt_tokens": 90, "prompt_tokens_details": {"cached_tokens_details": {"device": 7}}},
        None,
        Usage(prompt_tokens=90, cached_tokens=7),
    ),
    (  # llama.cpp: the prompt cache is in timings.cache_n
        Api.OPENAI_CHAT,
        {"prompt_tokens": 50, "completion_tokens": 4},
        {"cache_n": 32, "prompt_n": 18},
        Usage(prompt_tokens=50, cached_tokens=32, completion_tokens=4),
    ),
    (  # DeepSeek
        Api.OPENAI_CHAT,
        {"prompt_tokens": 9, "prompt_cache_hit_tokens": 5, "completion_tokens": 1},
        None,
        Usage(prompt_tokens=9, cached_tokens=5, completion_tokens=1),
    ),
    (  # a chat endpoint answering with the Responses names
        Api.OPENAI_CHAT,
        {"input_tokens": 9, "output_tokens": 2},
        None,
        Usage(prompt_tokens=9, completion_tokens=2),
    ),
    (  # OpenAI Responses
        Api.OPENAI_RESPONSES,
        {
            "input_tokens": 300,
            "output_tokens": 40,
            "input_tokens_details": {"cached_tokens": 256},
            "output_tokens_details": {"reasoning_tokens": 12},
        },
        None,
        Usage(prompt_tokens=300, cached_tokens=256, completion_tokens=40, reasoning_tokens=12),
    ),
    (  # Anthropic: input_tokens excludes cache reads and writes
        Api.ANTHROPIC_MESSAGES,
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 30,
            "cache_creation": {"ephemeral_5m_input_tokens": 200},
        },
        None,
        Usage(
            prompt_tokens=1210, cached_tokens=1000, cache_creation_tokens=200, completion_tokens=30
        ),
    ),
    (  # Anthropic without caching fields
        Api.ANTHROPIC_MESSAGES,
        {"input_tokens": 10, "output_tokens": 3},
        None,
        Usage(prompt_tokens=10, completion_tokens=3),
    ),
    (  # not ints: unknown
        Api.OPENAI_CHAT,
        {"prompt_tokens": "100", "completion_tokens": True, "prompt_tokens_details": None},
        {"cache_n": "x"},
        Usage(),
    ),
    (Api.OPENAI_RESPONSES, {}, None, Usage()),
]


@pytest.mark.parametrize(("api", "raw", "timings", "expected"), CASES)
def test_usage_of_every_family(
    api: str, raw: dict[str, Any], timings: dict[str, Any] | None, expected: Usage
) -> None:
    assert usage_from(api, raw, timings) == expected


def test_no_usage_is_all_unknown() -> None:
    for api in (Api.OPENAI_CHAT, Api.OPENAI_RESPONSES, Api.ANTHROPIC_MESSAGES, "other"):
        assert usage_from(api, None) == Usage()
        assert usage_from(api, [1, 2], "x") == Usage()  # type: ignore[arg-type]


def test_merge_later_ints_win_and_a_bad_value_stays_only_where_no_int_is_known() -> None:
    acc: dict[str, Any] = {}
    merge_usage(acc, {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation": {}})
    merge_usage(acc, {"output_tokens": 7, "input_tokens": 11, "bogus": None})
    merge_usage(acc, {"input_tokens": "lots", "cache_creation_input_tokens": "lots"})
    merge_usage(acc, None)
    assert acc == {
        "input_tokens": 11,
        "cache_read_input_tokens": 5,
        "output_tokens": 7,
        "cache_creation": {},
        "cache_creation_input_tokens": "lots",  # kept so that checked_usage names it
    }


COUNT = st.none() | st.integers(min_value=0, max_value=10**7) | st.booleans() | st.just("12")
ANTHROPIC = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": COUNT,
        "cache_read_input_tokens": COUNT,
        "cache_creation_input_tokens": COUNT,
        "output_tokens": COUNT,
    },
)
CHAT = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": COUNT,
        "completion_tokens": COUNT,
        "prompt_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": COUNT}),
        "completion_tokens_details": st.fixed_dictionaries(
            {}, optional={"reasoning_tokens": COUNT}
        ),
        "prompt_cache_hit_tokens": COUNT,
        "cached_tokens_details": st.dictionaries(st.sampled_from(["device", "host"]), COUNT),
    },
)
RESPONSES = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": COUNT,
        "output_tokens": COUNT,
        "input_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": COUNT}),
        "output_tokens_details": st.fixed_dictionaries({}, optional={"reasoning_tokens": COUNT}),
    },
)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@settings(max_examples=200, deadline=None)
@given(ANTHROPIC)
def test_anthropic_prompt_is_the_total_input(raw: dict[str, Any]) -> None:
    u = usage_from(Api.ANTHROPIC_MESSAGES, raw)
    uncached = _int(raw.get("input_tokens"))
    read, made = (
        _int(raw.get("cache_read_input_tokens")),
        _int(raw.get("cache_creation_input_tokens")),
    )
    impossible = any(  # a part present but not a count makes the total unknown
        raw.get(k) is not None and _int(raw.get(k)) is None
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    total = None if uncached is None else uncached + (read or 0) + (made or 0)
    assert u.prompt_tokens == (None if impossible else total)
    assert u.cached_tokens == read and u.cache_creation_tokens == made
    assert u.completion_tokens == _int(raw.get("output_tokens")) and u.reasoning_tokens is None


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(CHAT, RESPONSES, ANTHROPIC),
    st.sampled_from([Api.OPENAI_CHAT, Api.OPENAI_RESPONSES, Api.ANTHROPIC_MESSAGES]),
)
def test_fields_are_ints_or_unknown_and_cached_uses_the_family_names(
    raw: dict[str, Any], api: str
) -> None:
    u = usage_from(api, raw)
    for value in (
        u.prompt_tokens,
        u.cached_tokens,
        u.cache_creation_tokens,
        u.completion_tokens,
        u.reasoning_tokens,
    ):
        assert value is None or (isinstance(value, int) and not isinstance(value, bool))
    cached = (
        _int(raw.get("cache_read_input_tokens"))
        if api == Api.ANTHROPIC_MESSAGES
        else cached_from_usage(raw)
    )
    if cached is not None and u.prompt_tokens is not None and cached > u.prompt_tokens:
        cached = None  # impossible: more cached than prompt tokens
    assert u.cached_tokens == cached


# -- capture and replay read the same usage the same way ---------------------------------------


def _capture(api: str, events: list[tuple[str, dict[str, Any]]]) -> Usage:
    asm = family(api).assembler()
    for name, obj in events:
        asm.event(SSEEvent(name, orjson.dumps(obj).decode()))
    return asm.result().usage


def _replay(api: str, events: list[tuple[str, dict[str, Any]]]) -> tuple[int | None, ...]:
    parser = family(api).stream_parser(False)
    for name, obj in events:
        parser.feed(f"event: {name}\ndata: ".encode() + orjson.dumps(obj) + b"\n\n", 1)
    return parser.prompt_tokens, parser.completion_tokens, parser.cached_tokens


def _same(api: str, events: list[tuple[str, dict[str, Any]]]) -> None:
    u = _capture(api, events)
    assert _replay(api, events) == (u.prompt_tokens, u.completion_tokens, u.cached_tokens)


@settings(max_examples=150, deadline=None)
@given(CHAT, st.none() | st.fixed_dictionaries({"cache_n": COUNT}))
def test_chat_usage_chunk_reads_the_same_in_capture_and_replay(
    usage: dict[str, Any], timings: dict[str, Any] | None
) -> None:
    chunk: dict[str, Any] = {"choices": [], "usage": usage}
    if timings is not None:
        chunk["timings"] = timings
    events = [
        ("message", {"choices": [{"index": 0, "delta": {"content": "hi"}}]}),
        ("message", chunk),
    ]
    if usage:  # replay ignores an empty usage block (no usage seen); so does the comparison
        _same(Api.OPENAI_CHAT, events)


@settings(max_examples=150, deadline=None)
@given(ANTHROPIC, ANTHROPIC)
def test_anthropic_usage_in_two_events_reads_the_same_in_capture_and_replay(
    start: dict[str, Any], delta: dict[str, Any]
) -> None:
    _same(
        Api.ANTHROPIC_MESSAGES,
        [
            ("message_start", {"type": "message_start", "message": {"id": "m", "usage": start}}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta},
            ),
            ("message_stop", {"type": "message_stop"}),
        ],
    )


@settings(max_examples=150, deadline=None)
@given(RESPONSES)
def test_responses_completed_usage_reads_the_same_in_capture_and_replay(
    usage: dict[str, Any],
) -> None:
    done = {
        "type": "response.completed",
        "response": {"id": "r", "status": "completed", "usage": usage},
    }
    _same(Api.OPENAI_RESPONSES, [("response.completed", done)])
