"""agentx.apis.provider_fields: the one declaration of provider-only keys, and what uses it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.apis.provider_fields import (
    CACHE_MARKER_KEYS,
    PROVIDER_BLOCK_TYPES,
    PROVIDER_KEYS,
    has_provider_fields,
    strip_provider_fields,
    without_keys,
)
from agentx.prefixcache.tokens import request_tokens

KEYS = st.sampled_from(["type", "text", "role", "data", *sorted(PROVIDER_KEYS)])
LEAVES = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
TYPES = st.sampled_from(["text", "thinking", *sorted(PROVIDER_BLOCK_TYPES)])


def _json() -> st.SearchStrategy[Any]:
    return st.recursive(
        LEAVES | TYPES,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4)
        ),
        max_leaves=20,
    )


@settings(max_examples=300, deadline=None)
@given(_json())
def test_stripped_values_hold_no_provider_field_and_strip_is_idempotent(value: Any) -> None:
    stripped = strip_provider_fields(value)
    assert not _keys(stripped) & PROVIDER_KEYS
    assert not _blocks_in_lists(stripped)  # blocks are removed from their lists (content)
    assert strip_provider_fields(stripped) == stripped
    if not has_provider_fields(value):
        assert stripped == value


@settings(max_examples=200, deadline=None)
@given(_json())
def test_without_keys_removes_the_keys_at_any_depth(value: Any) -> None:
    out = without_keys(value, CACHE_MARKER_KEYS)
    assert not _keys(out) & CACHE_MARKER_KEYS
    assert without_keys(out, CACHE_MARKER_KEYS) == out
    if not _keys(value) & CACHE_MARKER_KEYS:
        assert out == value


def _blocks_in_lists(value: Any, in_list: bool = False) -> bool:
    if isinstance(value, dict):
        if in_list and str(value.get("type")) in PROVIDER_BLOCK_TYPES:
            return True
        return any(_blocks_in_lists(v) for v in value.values())
    if isinstance(value, list):
        return any(_blocks_in_lists(v, True) for v in value)
    return False


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


def test_provider_fields_do_not_change_the_rendered_tokens() -> None:
    """The tokenizer skips the same keys replay strips: a request renders the same tokens with
    and without its provider fields, so hit rates do not depend on cache markers."""
    plain = {
        "system": [{"type": "text", "text": "you are terse"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
        ],
    }
    marked = {
        "system": [{"type": "text", "text": "you are terse", "cache_control": {"type": "x"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {}}]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
            },
        ],
    }
    assert has_provider_fields(marked) and not has_provider_fields(plain)
    assert strip_provider_fields(marked) == plain
    a = request_tokens(Api.ANTHROPIC_MESSAGES, plain)
    b = request_tokens(Api.ANTHROPIC_MESSAGES, marked)
    assert list(a) == list(b)
