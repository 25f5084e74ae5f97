"""Synthetic text is token-exact in cl100k_base, block by block."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes, chain_ids
from agentx.prefixcache.synth import (
    BlockTexts,
    PrefixWords,
    ThreadText,
    Vocabulary,
    block_tokens,
    encoding_words,
    format_words,
    hash_id_text,
    hash_id_tokens,
    parse_words,
    vocabulary,
    words_path,
)
from agentx.prefixcache.tokens import encode, get_encoding


def test_every_word_is_one_token_that_never_merges() -> None:
    v = vocabulary()
    assert v.size > 5000
    enc = get_encoding()
    assert all(len(enc.encode(w)) == 1 for w in v.words)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(min_value=0), min_size=1, max_size=300))
def test_any_concatenation_of_words_tokenizes_back(picks: list[int]) -> None:
    v = vocabulary()
    ids = [int(v.ids[p % v.size]) for p in picks]
    text = get_encoding().decode(ids)
    assert encode(text).tolist() == ids


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=50), max_size=12),
    st.integers(min_value=0, max_value=64 * 14),
    st.sampled_from([16, 64, 512]),
)
def test_hash_id_text_is_token_exact(ids: list[int], n: int, block_size: int) -> None:
    tokens = hash_id_tokens(ids, block_size, n)
    assert tokens.size == n
    assert np.array_equal(encode(hash_id_text(ids, block_size, n)), tokens)
    for i, h in enumerate(ids[: n // block_size]):  # identical id -> identical block, anywhere
        assert np.array_equal(
            tokens[i * block_size : (i + 1) * block_size], block_tokens(h, block_size)
        )


def test_partial_last_block_is_a_prefix_of_the_full_block() -> None:
    full = hash_id_tokens([7, 8], 512, 1024)
    cut = hash_id_tokens([7, 8], 512, 700)  # Mooncake: ceil(700/512) = 2 ids, the last one partial
    assert np.array_equal(cut, full[:700])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 6), max_size=6), st.integers(0, 63)),
        min_size=1,
        max_size=8,
    )
)
def test_text_hit_rate_equals_hash_id_hit_rate(requests: list[tuple[list[int], int]]) -> None:
    bs = 64
    by_hash, by_text = UnboundedPrefixCache(bs), UnboundedPrefixCache(bs)
    for ids, tail in requests:
        # prefix-consistent ids, as Weka's are: id i of a request names its first i+1 blocks
        chained = [hash(tuple(ids[: i + 1])) % 1000 for i in range(len(ids))]
        n = len(ids) * bs + tail
        by_hash.observe(chain_ids(chained), n)
        by_text.observe(block_hashes(encode(hash_id_text(chained, bs, n)), bs), n)
    assert by_text.hit_tokens == by_hash.hit_tokens


def test_prefix_words_share_exactly_the_common_prefix() -> None:
    pw = PrefixWords(b"key")
    a = pw.chain([1, 2, 3, 4, 5])
    b = pw.chain([1, 2, 3, 9, 5])
    assert a[:3] == b[:3] and a[3] != b[3]
    assert PrefixWords(b"other").chain([1, 2, 3]) != a[:3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(-3, 12), max_size=10), st.integers(0, 70)),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([1, 16, 64]),
    st.integers(min_value=1, max_value=4000),
)
def test_thread_text_is_hash_id_text_turn_after_turn(
    turns: list[tuple[list[int], int]], block_size: int, max_bytes: int
) -> None:
    thread = ThreadText(BlockTexts(block_size, max_bytes=max_bytes))  # tiny caches evict
    ids: list[int] = []
    for extra, tail in turns:
        # mostly growing, sometimes rewritten: extend, or cut back to a prefix and extend
        ids = ids[: len(ids) - (extra[0] % 3 if extra else 0)] + extra
        for n in (len(ids) * block_size + tail % block_size, max(0, len(ids) - 1) * block_size):
            assert thread.text(ids, n) == hash_id_text(ids, block_size, n)
    assert thread.text(ids, 0) == ""


def test_block_texts_are_cached_within_a_bound() -> None:
    blocks = BlockTexts(64, max_bytes=2000)
    first = blocks.texts([1, 2, 3, 1])
    assert first[0] == first[3] and len(set(first)) == 3
    assert blocks.texts([1]) == first[:1]
    blocks.texts(list(range(100, 200)))
    assert blocks.bytes <= 2000 + len(first[0]) and len(blocks) < 100


def test_the_shipped_word_table_is_the_encodings_scan() -> None:
    # regenerate with scripts/make_synth_words.py if cl100k's words or the rules change
    assert words_path().exists()
    assert parse_words(words_path().read_text(encoding="ascii")) == encoding_words()


def test_a_vocabulary_from_the_table_equals_one_from_the_encoding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    shipped = Vocabulary()
    monkeypatch.setattr("agentx.prefixcache.synth.DATA_DIR", tmp_path)  # no table: the scan
    scanned = Vocabulary()
    assert not words_path().exists()
    assert shipped.words == scanned.words and shipped.size == scanned.size
    assert np.array_equal(shipped.ids, scanned.ids)
    assert np.array_equal(shipped._table, scanned._table)
    assert np.array_equal(shipped._lengths, scanned._lengths)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**6), st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
        )
    )
)
def test_word_table_text_round_trips(words: list[tuple[int, str]]) -> None:
    table = [(i, " " + w) for i, w in words]
    assert parse_words(format_words(table)) == table
