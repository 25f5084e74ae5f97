from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.apis.anthropic import MessagesStreamParser
from agentx.apis.openai_chat import ChatStreamParser
from agentx.apis.openai_responses import ResponsesStreamParser
from agentx.apis.stream import StreamProtocolError
from agentx.apis.usage_counts import cached_from_usage


def ev(obj: object) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def delta(**d: object) -> bytes:
    return ev({"choices": [{"index": 0, "delta": d}]})


CHAT = b"".join(
    [
        b": keep-alive\n\n",
        delta(role="assistant", content=""),  # role-only: not a token
        delta(reasoning_content="think"),  # reasoning: a token, not content
        delta(content="Hel"),
        delta(content="lo"),
        delta(
            tool_calls=[
                {"index": 0, "id": "call_1", "function": {"name": "Read", "arguments": '{"p'}}
            ]
        ),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '":1}'}}]),
        ev({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ev(
            {
                "choices": [],
                "usage": {
                    "prompt_tokens": 100,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 64},
                },
            }
        ),
        b"data: [DONE]\n\n",
    ]
)


def feed_all(parser: ChatStreamParser, data: bytes, cuts: list[int]) -> ChatStreamParser:
    points = sorted({c % (len(data) + 1) for c in cuts})
    prev = 0
    for t, cut in enumerate([*points, len(data)]):
        parser.feed(data[prev:cut], 1000 * (t + 1))
        prev = cut
    parser.finish(10**9)
    return parser


def test_chat_stream_timing_usage_and_live_message() -> None:
    p = ChatStreamParser(live=True)
    for i, event in enumerate(CHAT.split(b"\n\n")[:-1]):
        p.feed(event + b"\n\n", 100 * (i + 1))
    assert p.done and p.usage_seen
    assert p.first_token_ns == 300  # the reasoning chunk; keep-alive and role frames ignored
    assert p.first_content_ns == 400
    assert p.token_chunks == 5
    assert p.itl_ns == [100, 100, 100, 100]
    assert (p.prompt_tokens, p.completion_tokens, p.cached_tokens) == (100, 5, 64)
    assert p.finish_reason == "tool_calls"
    assert p.assistant_message() == {
        "role": "assistant",
        "content": "Hello",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "Read", "arguments": '{"p":1}'},
            }
        ],
    }


@given(st.lists(st.integers(min_value=0, max_value=len(CHAT)), max_size=40))
def test_chat_parse_does_not_depend_on_read_boundaries(cuts: list[int]) -> None:
    whole = feed_all(ChatStreamParser(live=True), CHAT, [])
    split = feed_all(ChatStreamParser(live=True), CHAT, cuts)
    assert split.done and split.token_chunks == whole.token_chunks == 5
    assert (split.prompt_tokens, split.completion_tokens, split.cached_tokens) == (100, 5, 64)
    assert split.assistant_message() == whole.assistant_message()
    assert split.first_content_ns is not None and split.first_token_ns is not None
    assert split.first_token_ns <= split.first_content_ns


def test_crlf_multiline_and_no_trailing_blank_line() -> None:
    data = CHAT.replace(b"\n", b"\r\n")
    data = data.replace(
        b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}',
        b'event: x\r\ndata: {"choices":[{"index":0,\r\ndata: "delta":{"content":"Hel"}}]}',
    )
    p = ChatStreamParser()
    p.feed(data.rstrip(b"\r\n"), 1)  # the last event has no blank line after it
    p.finish(2)
    assert p.done and p.token_chunks == 5 and p.cached_tokens == 64


@pytest.mark.parametrize(
    "event",
    [
        b"data: {not json\n\n",
        b"data: [1, 2]\n\n",
        ev({"error": {"message": "boom"}}),
        ev({"type": "error", "message": "x"}),
    ],
)
def test_malformed_and_error_events_raise(event: bytes) -> None:
    p = ChatStreamParser()
    p.feed(delta(content="a"), 1)
    with pytest.raises(StreamProtocolError):
        p.feed(event, 2)
    assert p.token_chunks == 1  # what came before is kept


def test_usage_absent_stays_none() -> None:
    p = ChatStreamParser()
    p.feed(delta(content="a") + b"data: [DONE]\n\n", 1)
    assert p.done and not p.usage_seen
    assert p.prompt_tokens is None and p.cached_tokens is None


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        ({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0}}, 0),
        ({"prompt_tokens": 9, "prompt_tokens_details": None}, None),
        ({"prompt_tokens": 9}, None),
        ({"input_tokens": 9, "input_tokens_details": {"cached_tokens": 4}}, 4),
        ({"input_tokens": 9, "cache_read_input_tokens": 7}, 7),
        ({"prompt_tokens": 9, "prompt_cache_hit_tokens": 5}, 5),  # DeepSeek
        (
            {"prompt_tokens": 9, "cached_tokens_details": {"device": 3, "host": 2}},
            5,
        ),  # SGLang HiCache
        (
            {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens_details": {"device": 1}}},
            1,
        ),
    ],
)
def test_cached_tokens_under_every_vendor_name(
    usage: dict[str, object], cached: int | None
) -> None:
    assert cached_from_usage(usage) == cached


def test_llama_cpp_timings_cache_n() -> None:
    p = ChatStreamParser()
    p.feed(
        ev(
            {
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1},
                "timings": {"cache_n": 6},
            }
        ),
        1,
    )
    assert p.cached_tokens == 6


def sse(name: str, obj: object) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def test_anthropic_stream_prompt_total_and_cache_reads() -> None:
    data = b"".join(
        [
            sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "usage": {
                            "input_tokens": 10,
                            "cache_read_input_tokens": 80,
                            "cache_creation_input_tokens": 5,
                            "output_tokens": 1,
                        }
                    },
                },
            ),
            sse("ping", {"type": "ping"}),
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "hm"},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "text_delta", "text": "Hi"},
                },
            ),
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 2,
                    "content_block": {"type": "tool_use", "id": "tu_1", "name": "Read"},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "{}"},
                },
            ),
            sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 12},
                },
            ),
            sse("message_stop", {"type": "message_stop"}),
        ]
    )
    p = MessagesStreamParser(live=True)
    for i, event in enumerate(data.split(b"\n\n")[:-1]):
        p.feed(event + b"\n\n", i)
    assert p.done and p.first_token_ns == 3 and p.first_content_ns == 4 and p.token_chunks == 3
    assert (p.prompt_tokens, p.cached_tokens, p.completion_tokens) == (95, 80, 12)
    assert p.assistant_message()["tool_calls"][0]["id"] == "tu_1"


def test_anthropic_error_event() -> None:
    with pytest.raises(StreamProtocolError, match="overloaded"):
        MessagesStreamParser().feed(
            sse(
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}},
            ),
            1,
        )


def test_responses_stream() -> None:
    data = b"".join(
        [
            sse("response.created", {"type": "response.created", "response": {}}),
            sse(
                "response.reasoning_summary_text.delta",
                {"type": "response.reasoning_summary_text.delta", "delta": "r"},
            ),
            sse(
                "response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hi"}
            ),
            sse(
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        "status": "completed",
                        "usage": {
                            "input_tokens": 50,
                            "output_tokens": 2,
                            "input_tokens_details": {"cached_tokens": 32},
                        },
                    },
                },
            ),
        ]
    )
    p = ResponsesStreamParser()
    p.feed(data, 7)
    assert p.done and p.token_chunks == 2 and p.first_content_ns == 7
    assert (p.prompt_tokens, p.completion_tokens, p.cached_tokens) == (50, 2, 32)
