"""Hypothesis strategies for request sequences as coding agents send them.

Sessions hold threads; a thread's next request keeps a prefix of its previous conversation
(usually all of it, sometimes a cut: a branch, a compaction, an edited message) and appends new
items. Anthropic ``cache_control`` markers move to the newest block, editing the old one.
Bodies cover all three API families plus non-dict bodies and odd shapes.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from agentx.apis import Api
from agentx.core.models import Credential, Exchange, Response, Timing, Usage

# any unicode, plus now and then a lone surrogate (what json.loads makes of "\ud800")
text = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4).map(lambda s: s + "\ud83d"),
)
plain = st.text(max_size=12)  # free-text columns (lone surrogates there become U+FFFD)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)


def _chat_message() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "system"]), "content": text}
        ),
        st.fixed_dictionaries(
            {
                "role": st.just("assistant"),
                "content": st.none() | text,
                "tool_calls": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": text,
                            "type": st.just("function"),
                            "function": st.fixed_dictionaries({"name": text, "arguments": text}),
                        }
                    ),
                    max_size=2,
                ),
            }
        ),
        st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": text, "content": text}),
        st.fixed_dictionaries(
            {
                "role": st.just("user"),
                "content": st.lists(
                    st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2
                ),
            },
            optional={"name": text},
        ),
        json_values,  # anything at all: the store must not care
    )


def _anthropic_block() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": text}),
        st.fixed_dictionaries(
            {"type": st.just("tool_use"), "id": text, "name": text, "input": json_values}
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("tool_result"),
                "tool_use_id": text,
                "content": text
                | st.lists(
                    st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2
                ),
            },
            optional={"is_error": st.booleans()},
        ),
        st.fixed_dictionaries({"type": st.just("thinking"), "thinking": text, "signature": text}),
    )


def _anthropic_message() -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": text | st.lists(_anthropic_block(), min_size=1, max_size=3),
        }
    )


def _responses_item() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.just("message"),
                "role": st.sampled_from(["user", "assistant", "developer"]),
                "content": st.lists(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["input_text", "output_text"]), "text": text}
                    ),
                    max_size=2,
                ),
            }
        ),
        st.fixed_dictionaries(
            {"type": st.just("function_call"), "call_id": text, "name": text, "arguments": text}
        ),
        st.fixed_dictionaries(
            {"type": st.just("function_call_output"), "call_id": text, "output": text}
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("reasoning"),
                "id": text,
                "summary": st.just([]),
                "encrypted_content": text,
            }
        ),
    )


ITEMS = {
    Api.OPENAI_CHAT: _chat_message(),
    Api.ANTHROPIC_MESSAGES: _anthropic_message(),
    Api.OPENAI_RESPONSES: _responses_item(),
}
TOOLS = st.lists(
    st.fixed_dictionaries({"name": text, "description": text, "input_schema": json_values}),
    max_size=2,
)


SYSTEM = text | st.lists(_anthropic_block(), max_size=2) | st.none()
EXTRA_KEYS = st.lists(
    st.sampled_from(["max_tokens", "stream", "temperature", "metadata", "x"]),
    unique=True,
    max_size=3,
)
API = st.sampled_from([Api.OPENAI_CHAT, Api.ANTHROPIC_MESSAGES, Api.OPENAI_RESPONSES, Api.OTHER])
SESSION = st.sampled_from(["s1", "s2"])
THREAD = st.sampled_from(["main", "sub", "side"])
NEW_ITEMS = {api: st.lists(items, max_size=3) for api, items in ITEMS.items()}
OFFSETS = st.lists(st.integers(0, 10**12), max_size=3).map(tuple)
TOOL_CALLS = st.lists(
    st.fixed_dictionaries({"id": text, "name": text, "arguments": text}), max_size=2
).map(tuple)
USAGE = st.builds(
    Usage,
    prompt_tokens=st.none() | st.integers(0, 10**6),
    cached_tokens=st.none() | st.integers(0, 10**6),
)
CREDENTIALS = st.lists(
    st.builds(Credential, header=plain, family=st.none() | plain, salted_hash=plain), max_size=1
).map(tuple)
FLAGS = st.lists(plain, max_size=2).map(tuple)
HASH_IDS = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4).map(tuple)
OPTIONAL_INT = st.none() | st.integers(0, 10**12)
OPTIONAL_TEXT = st.none() | plain
THINK = st.none() | st.floats(0, 1e4)


def _body(draw: st.DrawFn, api: str, conv: list[Any]) -> Any:
    """A body carrying ``conv``, with params, tools, system in some key order."""
    if api == Api.OTHER:
        return draw(json_values)
    key = "input" if api == Api.OPENAI_RESPONSES else "messages"
    fields: dict[str, Any] = {"model": draw(text), key: conv}
    if draw(st.booleans()):
        fields["tools"] = draw(TOOLS)
    system_key = "instructions" if api == Api.OPENAI_RESPONSES else "system"
    if draw(st.booleans()):
        fields[system_key] = draw(SYSTEM)
    for extra in draw(EXTRA_KEYS):
        fields[extra] = draw(json_values)
    keys = draw(st.permutations(list(fields)))
    return {k: fields[k] for k in keys}


def _move_cache_control(conv: list[Any]) -> None:
    """Anthropic clients mark the newest block for caching and unmark the previous one."""
    for msg in conv:
        if isinstance(msg, dict) and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict):
                    block.pop("cache_control", None)
    last = conv[-1] if conv else None
    if isinstance(last, dict) and isinstance(last.get("content"), list) and last["content"]:
        block = last["content"][-1]
        if isinstance(block, dict):
            block["cache_control"] = {"type": "ephemeral"}


@st.composite
def exchange_sequences(draw: st.DrawFn, max_requests: int = 12) -> list[Exchange]:
    n = draw(st.integers(min_value=1, max_value=max_requests))
    threads: dict[tuple[str, str], tuple[str, list[Any], str]] = {}  # -> (api, conv, last id)
    thread_ids: dict[tuple[str, str], tuple[int, ...]] = {}  # hash ids of a thread's last row
    out: list[Exchange] = []
    for i in range(n):
        session = draw(SESSION)
        thread = draw(THREAD)
        rid = f"r{i}"
        state = threads.get((session, thread))
        if state is None or draw(st.integers(0, 9)) == 0:
            api = draw(API)
            conv: list[Any] = []
            parent = None
        else:
            api, prev, parent = state
            conv = copy.deepcopy(prev)
            cut = draw(st.integers(0, 5))
            if cut == 0 and conv:  # branch / compaction: keep only a prefix
                conv = conv[: draw(st.integers(0, len(conv)))]
            elif cut == 1 and conv:  # an earlier message edited in place
                j = draw(st.integers(0, len(conv) - 1))
                conv[j] = draw(ITEMS.get(api, json_values))
        if api != Api.OTHER:
            conv.extend(draw(NEW_ITEMS[api]))
            if api == Api.ANTHROPIC_MESSAGES and draw(st.booleans()):
                _move_cache_control(conv)
        body = _body(draw, api, copy.deepcopy(conv))
        if api == Api.OPENAI_RESPONSES and draw(st.integers(0, 9)) == 0:
            body["input"] = draw(text)  # the Responses API also takes a bare string
        if api == Api.OPENAI_CHAT and draw(st.integers(0, 9)) == 0:
            body["messages"] = draw(json_values)  # not a list: stored verbatim in the params
        parent_id = draw(st.sampled_from([parent, None, "nope", f"r{max(i - 1, 0)}"]))
        ex = Exchange(
            request_id=rid,
            session_id=session,
            thread_id=thread,
            api=api,
            request=body,
            timing=Timing(
                start_wall_ns=i,
                ttft_ns=draw(OPTIONAL_INT),
                chunk_offsets_ns=draw(OFFSETS),
            ),
            parent_request_id=parent_id if parent_id != rid else None,
            model=draw(OPTIONAL_TEXT),
            response=Response(
                text=draw(OPTIONAL_TEXT), tool_calls=draw(TOOL_CALLS), message=draw(json_values)
            ),
            usage=draw(USAGE),
            think_time_s=draw(THINK),
            credentials=draw(CREDENTIALS),
            flags=draw(FLAGS),
            hash_ids=_hash_ids(draw, thread_ids.get((session, thread))),
            hash_block_size=draw(st.none() | st.integers(1, 512)),
        )
        out.append(ex)
        threads[(session, thread)] = (api, conv, rid)
        if ex.hash_ids is not None:
            thread_ids[(session, thread)] = ex.hash_ids
    return out


def _hash_ids(draw: st.DrawFn, previous: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """None (a text row), or block ids that usually extend a prefix of the thread's last ones
    (a growing prompt, a compaction cut, consecutive new ids as importers see them)."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return None
    if previous is None or kind == 1:
        return tuple(draw(HASH_IDS))
    keep = len(previous) if kind < 4 else draw(st.integers(0, len(previous)))
    start = draw(st.integers(0, 2**40))
    run = tuple(range(start, start + draw(st.integers(0, 9))))
    return previous[:keep] + run + tuple(draw(HASH_IDS))
