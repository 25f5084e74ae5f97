"""The chat stream's byte-level fast path agrees with the full decode on every event, valid or
not, and never takes a wrong-shaped chunk for a token."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis.fastpath import Slot, learn, match, slot_text
from agentx.apis.openai_chat import CONTENT_PATH, ChatStreamParser
from agentx.apis.stream import StreamProtocolError

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m"}


def chunk(content: Any, **choice: Any) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": {"content": content}, **choice}]}


def sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def outcome(parser: ChatStreamParser, reads: list[bytes]) -> tuple[Any, ...]:
    error = None
    try:
        for t, data in enumerate(reads):
            parser.feed(data, 1000 * (t + 1))
        parser.finish(10**9)
    except StreamProtocolError as exc:
        error = str(exc)
    return (
        error,
        parser.token_chunks,
        parser.itl_ns,
        parser.first_token_ns,
        parser.first_content_ns,
        parser.last_token_ns,
        parser.finish_reason,
        parser.usage_seen,
        (parser.prompt_tokens, parser.completion_tokens, parser.cached_tokens),
        parser.done,
        parser.assistant_message() if parser.live else None,
    )


def both(reads: list[bytes], live: bool = False) -> tuple[tuple[Any, ...], ChatStreamParser]:
    fast = ChatStreamParser(live, fast=True)
    got = outcome(fast, reads)
    assert got == outcome(ChatStreamParser(live, fast=False), reads)
    return got, fast


def grouped(events: list[bytes], sizes: list[int]) -> list[bytes]:
    """The events in reads of the given sizes (a read of several events, or one)."""
    reads, i = [], 0
    for size in sizes:
        reads.append(b"".join(events[i : i + size]))
        i += size
    reads.append(b"".join(events[i:]))
    return reads


def test_the_slot_is_learnt_and_used() -> None:
    events = [sse(chunk("a")), *(sse(chunk(f" t{i}", finish_reason=None)) for i in range(5))]
    events += [sse(chunk("", finish_reason="stop")), b"data: [DONE]\n\n"]
    got, parser = both(grouped(events, [1, 1, 3]), live=True)
    # the first content delta's shape (no finish_reason) is not the others': learnt again
    assert parser._head is not None and parser._head.endswith(b'"content":"')
    assert parser._tail.endswith(b'"finish_reason":null}]}')
    assert got[1] == 6 and got[2] == [1000, 1000, 0, 0, 1000]  # one instant per read
    assert got[-1]["content"] == "a t0 t1 t2 t3 t4"


# text of any kind: escapes, quotes, control characters, non-ASCII, surrogate-free
TEXT = st.text(min_size=0, max_size=12)
EXTRA = st.dictionaries(
    st.sampled_from(["logprobs", "stop_reason", "token_ids", "system_fingerprint"]),
    st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=4)),
    max_size=2,
)


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=12),
    extra=EXTRA,
    sizes=st.lists(st.integers(1, 4), max_size=6),
    live=st.booleans(),
)
def test_fast_path_agrees_with_the_full_decode_on_valid_events(
    texts: list[str], extra: dict[str, Any], sizes: list[int], live: bool
) -> None:
    events = [sse({**chunk(t, finish_reason=None), **extra}) for t in texts]
    usage = {"prompt_tokens": 3, "completion_tokens": len(texts)}
    events += [sse({**BASE, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
    both(grouped(events, sizes), live)


@settings(max_examples=400, deadline=None)
@given(
    junk=st.binary(max_size=12)
    | st.sampled_from([b'"', b"\\", b'x\\"', b"\t", b"\xff", b"\xc3", b'","x":"', b"\\u12"]),
    before=st.integers(1, 3),
    live=st.booleans(),
)
def test_any_bytes_in_the_slot_agree(junk: bytes, before: int, live: bool) -> None:
    """What the slot holds decides: a valid string body is a token, anything else takes the
    full decode and is rejected or read exactly as it would be."""
    head, tail = sse(chunk("PLACEHOLDER")).split(b"PLACEHOLDER")
    events = [sse(chunk(f"w{i}")) for i in range(before)]
    events.append((head + junk + tail).replace(b"\n", b" ").rstrip() + b"\n\n")
    events.append(sse(chunk("after")))
    both(grouped(events, [before]), live)


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, 10**6), byte=st.integers(0, 255), live=st.booleans())
def test_a_changed_byte_outside_the_slot_never_passes_for_a_token(
    at: int, byte: int, live: bool
) -> None:
    learnt = sse(chunk("x"))
    event = bytearray(sse(chunk("y")))
    at %= len(event) - 2  # not the blank line
    if event[at : at + 1] == b"y" or byte == 10:  # the slot itself, or a line break
        return
    event[at] = byte
    both([learnt + bytes(event) + sse(chunk("z"))], live)


@pytest.mark.parametrize(
    "wrong",
    [
        chunk(5),
        chunk(["a"]),
        chunk("a", finish_reason=3),
        {**BASE, "choices": "oops"},
        {**BASE, "choices": [{"index": 0, "delta": "x"}]},
        {**BASE, "error": {"message": "boom"}},
    ],
)
def test_wrong_shaped_chunks_after_the_slot_still_fail(wrong: dict[str, Any]) -> None:
    reads = [sse(chunk("a")) + sse(chunk("b")), sse(chunk("c")) + sse(wrong)]
    got, parser = both(reads)
    assert parser._head is not None
    assert got[0] is not None and got[1] >= 3  # the tokens before it counted


def test_usage_finish_and_tool_calls_are_never_slotted() -> None:
    events = [sse(chunk("a")), sse(chunk("b"))]
    events.append(sse(chunk("c", finish_reason="length")))
    call = {"index": 0, "id": "c1", "function": {"name": "Read", "arguments": "{}"}}
    events.append(sse({**BASE, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    events.append(sse({**chunk("d"), "usage": {"prompt_tokens": 1, "completion_tokens": 4}}))
    got, _ = both([b"".join(events)], live=True)
    assert got[6] == "length" and got[7] and got[1] == 5


def test_learn_refuses_what_its_bytes_do_not_prove() -> None:
    plain = sse(chunk("hi"))[:-2]
    obj = orjson.loads(plain[6:])
    slot = learn(plain, 6, obj, CONTENT_PATH)
    assert slot == Slot(plain[: plain.index(b"hi")], plain[plain.index(b"hi") + 2 :])
    assert match(slot, plain.replace(b"hi", b"yo")) == "yo"
    assert match(slot, plain.replace(b"hi", b"")) is None
    assert match(slot, plain.replace(b"hi", b'a"b')) is None
    spaced = plain.replace(b'"content":"hi"', b'"content": "hi"')
    repeated = plain.replace(b'"content":"hi"', b'"content":"hi","content":"hi"')
    elsewhere = plain.replace(b'"model":"m"', b'"model":"m","x":{"content":"hi"}')
    for event in (spaced, repeated, elsewhere):
        assert learn(event, 6, orjson.loads(event[6:]), CONTENT_PATH) is None
    assert learn(plain, 6, orjson.loads(sse(chunk(""))[6:]), CONTENT_PATH) is None


@given(st.binary(max_size=16) | st.text(max_size=8).map(lambda t: orjson.dumps(t)[1:-1]))
def test_slot_text_is_the_string_decode(body: bytes) -> None:
    try:
        expected = orjson.loads(b'"' + body + b'"')
    except orjson.JSONDecodeError:
        expected = None
    assert slot_text(body) == expected
