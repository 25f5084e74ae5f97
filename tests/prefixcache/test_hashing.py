"""The block-hash prefix model: vLLM's rules, chaining, the unbounded cache, incremental hashing."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache import cache as cache_mod
from agentx.prefixcache import hashing as prefix
from agentx.prefixcache.cache import UnboundedPrefixCache, hittable_blocks, theoretical_hit_rate
from agentx.prefixcache.hashing import IdChainer, RequestHasher, block_hashes, chain_ids
from agentx.prefixcache.tokens import request_tokens

tokens_st = st.lists(st.integers(0, 100_000), max_size=200)


@given(tokens_st, st.integers(1, 40))
def test_one_hash_per_full_block(toks: list[int], bs: int) -> None:
    assert block_hashes(toks, bs).size == len(toks) // bs


@given(tokens_st, tokens_st, st.integers(1, 16))
def test_equal_hash_iff_equal_prefix(a: list[int], b: list[int], bs: int) -> None:
    ha, hb = block_hashes(a, bs), block_hashes(b, bs)
    for i in range(min(ha.size, hb.size)):
        same_prefix = a[: (i + 1) * bs] == b[: (i + 1) * bs]
        assert (ha[i] == hb[i]) == same_prefix


def test_a_changed_token_changes_every_later_block() -> None:
    toks = list(range(160))
    changed = [*toks[:20], 9999, *toks[21:]]
    a, b = block_hashes(toks, 16), block_hashes(changed, 16)
    assert a[0] == b[0]
    assert all(a[i] != b[i] for i in range(1, 10))


@pytest.mark.parametrize(
    ("n", "bs", "want"),
    [(0, 16, 0), (1, 16, 0), (16, 16, 0), (17, 16, 1), (32, 16, 1), (33, 16, 2)],
)
def test_the_last_prompt_token_is_never_a_hit(n: int, bs: int, want: int) -> None:
    assert hittable_blocks(n, bs) == want


def test_unbounded_cache_serves_repeats_up_to_the_last_token() -> None:
    cache = UnboundedPrefixCache(16)
    toks = np.arange(100)
    first = cache.observe(block_hashes(toks, 16), 100)
    again = cache.observe(block_hashes(toks, 16), 100)
    longer = cache.observe(block_hashes(np.arange(200), 16), 200)
    assert (first.hit_tokens, again.hit_tokens, longer.hit_tokens) == (0, 96, 96)
    exact32 = UnboundedPrefixCache(16)
    exact32.observe(block_hashes(np.arange(32), 16), 32)
    assert exact32.observe(block_hashes(np.arange(32), 16), 32).hit_tokens == 16  # not 32
    assert cache.hit_rate == pytest.approx(192 / 400)


def test_theoretical_hit_rate_of_a_growing_session() -> None:
    reqs = [(block_hashes(np.arange(n), 16), n) for n in (100, 200, 300)]
    # hits: 0, then 6 blocks of the first 100 tokens, then 12 blocks of the first 200
    assert theoretical_hit_rate(reqs, 16) == pytest.approx((0 + 96 + 192) / 600)


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 5))
def test_coarsened_ids_name_the_same_prefixes(ids: list[int], group: int) -> None:
    fine = chain_ids(ids)
    coarse = chain_ids(ids, group)
    assert coarse.size == len(ids) // group
    assert np.array_equal(coarse, fine[group - 1 :: group])


def test_chained_ids_separate_equal_blocks_after_a_difference() -> None:
    a, b = chain_ids([1, 2, 3]), chain_ids([1, 9, 3])
    assert a[0] == b[0] and a[1] != b[1] and a[2] != b[2]


# ---- RequestHasher: the incremental path equals the reference on any request sequence ----

values = st.one_of(
    st.integers(0, 2), st.booleans(), st.floats(0, 2, allow_nan=False), st.text(max_size=30)
)
message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool"]),
        "content": st.text(max_size=60)
        | st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)}),
            max_size=2,
        ),
    },
    optional={"x": values, "cache_control": st.just({"type": "ephemeral"})},
)
step = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.integers(0, 6),  # 0: cut to a prefix, 1: edit an item's value type, else extend
    st.lists(message, max_size=3),
    st.sampled_from(["openai.chat", "anthropic.messages", "openai.responses"]),
    st.booleans(),  # change the tools
)


@settings(max_examples=60, deadline=None)
@given(st.lists(step, max_size=12), st.sampled_from([1, 4, 16]), st.booleans())
def test_incremental_hashes_equal_the_reference(steps: list[Any], bs: int, compact: bool) -> None:
    hasher = RequestHasher(bs, max_threads=2, compact=compact)  # small: eviction exercised too
    convs: dict[str, list[Any]] = {}
    tools: dict[str, list[Any]] = {}
    for thread, op, new, api, retool in steps:
        conv = convs.get(thread, [])
        if op == 0:
            conv = conv[: len(conv) // 2]
        elif op == 1 and conv:
            conv = copy.deepcopy(conv)
            first = conv[0]
            first["x"] = True if first.get("x") == 1 else 1  # == but not the same rendering
        conv = [*conv, *new]
        if retool or thread not in tools:
            tools[thread] = [{"name": f"tool{len(conv)}"}] if len(conv) % 3 else []
        key = "input" if api == "openai.responses" else "messages"
        body = {"tools": tools[thread], "system": "sys", "instructions": "ins", key: conv}
        hashes, n = hasher.hash_request(api, body, thread)
        ref = request_tokens(api, body)
        assert n == ref.size
        assert np.array_equal(hashes, block_hashes(ref, bs))
        convs[thread] = conv


def test_a_forgotten_thread_hashes_alike_from_scratch() -> None:
    hasher = RequestHasher(16)
    msgs = [{"role": "user", "content": "a long question " * 400}]
    first = hasher.hash_request("openai.chat", {"messages": msgs}, "t")
    hasher.forget("t")
    hasher.forget("never seen")
    assert len(hasher._threads) == 0
    msgs = [*msgs, {"role": "assistant", "content": "an answer"}]
    again = hasher.hash_request("openai.chat", {"messages": msgs}, "t")
    ref = request_tokens("openai.chat", {"messages": msgs})
    assert np.array_equal(again[0], block_hashes(ref, 16)) and again[1] == ref.size
    assert np.array_equal(again[0][: first[0].size], first[0])


def test_incremental_hasher_handles_odd_bodies() -> None:
    hasher = RequestHasher(4)
    for body in (None, "text", [1, 2], {"messages": "not a list"}, {}):
        hashes, _ = hasher.hash_request("openai.chat", body, "t")
        assert np.array_equal(hashes, block_hashes(request_tokens("openai.chat", body), 4))
    with pytest.raises(ValueError):
        RequestHasher(0)


def test_powers_table_grows_consistently() -> None:
    small = block_hashes(np.arange(40), 8)
    big = block_hashes(np.arange(100_000), 8)  # forces the table to grow
    assert np.array_equal(small, big[:5])
    assert prefix._powers_upto(3)[0] == 1


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=8), max_size=30), st.integers(0, 40))
def test_block_set_is_a_set(batches: list[list[int]], probe: int) -> None:
    # a tiny buffer and level cap: sorted levels, merges, and levels that stop growing
    blocks, ref = cache_mod.BlockSet(buffer=3, max_level=12), set()
    for batch in batches:
        blocks.update(batch)
        ref.update(batch)
        assert len(blocks) == len(ref)
    assert all(h in blocks for h in ref)
    assert (probe in blocks) == (probe in ref)
    levels = blocks._levels
    assert all(np.all(x[1:] > x[:-1]) for x in levels)  # each sorted, no duplicate
    capped = sum(x.size > 6 for x in levels)  # past half the cap: may stop merging
    assert len(levels) <= capped + 1 + max(1, len(ref)).bit_length()  # merges keep levels few


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=10), st.integers(0, 200)), max_size=30)
)
def test_unbounded_cache_agrees_with_a_linear_scan(requests: list[tuple[list[int], int]]) -> None:
    cache, seen = UnboundedPrefixCache(4), set()
    cache._seen = cache_mod.BlockSet(buffer=3, max_level=12)
    hit_ref = 0
    for ids, n in requests:
        hashes = chain_ids(ids).tolist()
        hit = 0
        for h in hashes[: hittable_blocks(n, 4)]:
            if h not in seen:
                break
            hit += 1
        seen.update(hashes)
        hit_ref += 4 * hit
        assert cache.observe(chain_ids(ids), n).hit_tokens == 4 * hit
    assert (cache.hit_tokens, len(cache)) == (hit_ref, len(seen))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.integers(0, 40),
            st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6),
        ),
        max_size=15,
    )
)
def test_id_chainer_equals_chain_ids(rows: list[tuple[str, int, list[int]]]) -> None:
    """Incremental per thread (a prefix kept, a cut, new ids) gives chain_ids' values."""
    chainer, last = IdChainer(max_threads=1), {"a": (), "b": ()}
    for thread, keep, new in rows:
        ids = last[thread][:keep] + tuple(new)
        last[thread] = ids
        assert chainer.chain(thread, ids).tolist() == chain_ids(ids).tolist()


def test_salted_hashes_differ_per_salt_and_keep_equal_blocks_equal() -> None:
    from agentx.prefixcache.hashing import salted

    h = chain_ids([1, 2, 3, 4])
    a, b = salted(h, 0), salted(h, 1)
    assert len(set(a.tolist()) | set(b.tolist()) | set(h.tolist())) == 12
    assert (salted(h, 0) == a).all()  # deterministic: an instance's turns share their prefix
    assert (salted(chain_ids([1, 2, 9]), 0)[:2] == a[:2]).all()


# ---- one long message that grows: a synthetic prompt, as replay sends a hash-only trace ----

_WORDS = ["alpha", "beta", "x1", "it's", "(y)", "\n", "  ", "é", "zeta\n", "42", "-", "\t"]


def _text(rng: np.random.Generator, n_words: int) -> str:
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), n_words))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3000)), min_size=1, max_size=8),
    st.integers(0, 2**31),
    st.sampled_from([1, 16, 64]),
    st.booleans(),
)
def test_a_growing_long_message_hashes_like_the_reference(
    steps: list[tuple[int, int]], seed: int, bs: int, compact: bool
) -> None:
    """Each request is one user message (often past several pieces of text) that extends,
    edits near its end, cuts or rewrites the previous one, beside a second thread."""
    rng = np.random.default_rng(seed)
    hasher = RequestHasher(bs, compact=compact)
    text = _text(rng, 3000)
    for op, n in steps:
        if op == 0:  # extend
            text += _text(rng, n)
        elif op == 1:  # re-hash the end: a few characters before it change, then more
            text = text[: max(0, len(text) - 1 - n % 500)] + "Q" + _text(rng, n)
        elif op == 2:  # cut to a prefix
            text = text[: len(text) * 2 // 3]
        elif op == 3:  # a change early on
            text = "early " + text[7:]
        for thread, content in (("t", text), ("u", text[::-1])):
            body = {"model": "m", "messages": [{"role": "user", "content": content}]}
            if op == 4:  # a second message after it: the long one is no longer the last
                body["messages"].append({"role": "assistant", "content": _text(rng, 20)})
            hashes, n_tokens = hasher.hash_request("openai.chat", body, thread)
            ref = request_tokens("openai.chat", body)
            assert n_tokens == ref.size
            assert np.array_equal(hashes, block_hashes(ref, bs))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**40), max_size=50), st.lists(st.integers(0, 2**40), max_size=50))
def test_a_chain_extended_is_the_chain_of_the_whole(a: list[int], b: list[int]) -> None:
    from agentx.prefixcache.hashing import extend_chain

    head_sums, head = extend_chain(a, 0, None)
    sums, tail = extend_chain(b, len(a), head_sums[-1] if a else None)
    assert head.tolist() + tail.tolist() == prefix.chain_ids(a + b).tolist()
    assert head_sums.tolist() + sums.tolist() == extend_chain(a + b, 0, None)[0].tolist()


def test_a_compact_hasher_keeps_digests_not_the_prompt() -> None:
    """What a compact thread keeps is bytes digests and offsets, none of the body's objects;
    the long message is resumed from its windows (the next request encodes only its end)."""
    rng = np.random.default_rng(3)
    text = _text(rng, 8000)
    compact, plain = RequestHasher(16, compact=True), RequestHasher(16)
    for content in (text, text + _text(rng, 50)):
        body = {"tools": [{"name": "t"}], "messages": [{"role": "user", "content": content}]}
        got = compact.hash_request("openai.chat", body, "t")
        want = plain.hash_request("openai.chat", body, "t")
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    state = compact._threads["t"]
    assert state.head == [] and state.conv == []
    assert state.keys[-1] == b""  # the growing message: compared by its text's windows
    digests = [*state.keys[:-1], *state.tail_windows, state.tail_rest]
    assert all(isinstance(k, bytes) and len(k) == 20 for k in digests)
    assert len(state.tail_windows) == len(state.tail_cuts) > 2
    assert state.tail_tokens == plain._threads["t"].tail_tokens
