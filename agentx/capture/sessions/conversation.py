"""What is compared of a conversation: hashes of its prefixes, whether it offers tools, its
texts and the answers it repeats."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from agentx.apis.provider_fields import CACHE_MARKER_KEYS, without_keys
from agentx.core.models import JSON
from agentx.prefixcache.tokens import render_content, render_message


def digest(value: Any) -> bytes:
    return hashlib.blake2b(
        orjson.dumps(without_keys(value, CACHE_MARKER_KEYS), option=orjson.OPT_SORT_KEYS),
        digest_size=16,
    ).digest()


def chain_hashes(items: list[JSON]) -> list[bytes]:
    """``out[k]`` names the prefix ``items[:k + 1]``: equal hashes mean equal prefixes."""
    out: list[bytes] = []
    h = b""
    for it in items:
        h = hashlib.blake2b(h + digest(it), digest_size=16).digest()
        out.append(h)
    return out


def has_tools(body: JSON) -> bool:
    """Whether the request offers the model tools (Codex sends them as an input item)."""
    if not isinstance(body, dict):
        return False
    if body.get("tools") or body.get("functions"):
        return True
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(it, dict) and it.get("type") == "additional_tools" and it.get("tools")
        for it in items[:8]
    )


def text_of(value: Any, out: list[str], limit: int = 200_000) -> None:
    """Every string inside ``value`` (depth first), up to ``limit`` characters in all."""
    if sum(len(s) for s in out) >= limit:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            text_of(v, out, limit)
    elif isinstance(value, list):
        for v in value:
            text_of(v, out, limit)


def first_user_parts(items: list[JSON]) -> list[str]:
    """The strings of the first user message, in order (its text blocks, for most agents)."""
    for it in items:
        if isinstance(it, dict) and it.get("role") == "user":
            parts: list[str] = []
            text_of(it.get("content"), parts)
            return [p for p in parts if p]
    return []


def first_user_text(items: list[JSON]) -> str:
    return "\n".join(first_user_parts(items))


def answer_digest(text: str) -> bytes | None:
    """Agents re-send an answer with its surrounding whitespace stripped (aider does)."""
    text = text.strip()
    return hashlib.blake2b(text.encode(), digest_size=16).digest() if text else None


def assistant_digests(items: list[JSON]) -> dict[bytes, int]:
    """The digest of every assistant text in ``items`` -> its last position."""
    out: dict[bytes, int] = {}
    for i, it in enumerate(items):
        if isinstance(it, dict) and it.get("role") in ("assistant", "model"):
            d = answer_digest(render_content(it.get("content")))
            if d is not None:
                out[d] = i
    return out


def replaced_tail(parent: list[JSON], child: list[JSON], shared: int) -> int:
    """Characters at the end of ``parent``'s rendered conversation that are not a prefix of
    ``child``'s, given that their first ``shared`` items are equal."""
    old = "".join(render_message(m) for m in parent[shared:])
    new = "".join(render_message(m) for m in child[shared:])
    n = min(len(old), len(new))
    i = 0
    while i < n and old[i] == new[i]:
        i += 1
    return len(old) - i
