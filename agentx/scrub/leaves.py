"""The text leaves of a request part, found and replaced in a fixed walk order.

A *leaf* is a string that carries content: message text, tool results, tool-call arguments,
system prompts, tool descriptions. Structure stays: dict keys, roles, block types, ids, tool
names, JSON-schema types and required lists. Tool-call ``arguments`` strings that hold JSON are
not one leaf: the string values inside are, and are replaced in place so the arguments stay
valid JSON in their original formatting. Opaque provider blobs (signatures, encrypted reasoning)
are not context; they get a keyed pseudonym. Strings with no letter or digit carry no content
and are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from agentx.apis.provider_fields import OPAQUE_KEYS
from agentx.core.models import JSON

STRUCTURAL_KEYS = frozenset(
    {
        "role",
        "type",
        "id",
        "tool_call_id",
        "tool_use_id",
        "call_id",
        "name",
        "status",
        "media_type",
        "model",
        "format",
        "$schema",
        "$ref",
        "required",
        "pattern",
        "detail",
    }
)
JSON_STRING_KEYS = frozenset({"arguments"})
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_CONTENT = re.compile(r"[^\W_]")  # a letter or a digit


@dataclass(frozen=True, slots=True)
class Leaf:
    text: str  # as it appears in its container (for a literal inside JSON text: still escaped)
    depth: int  # JSON-escaping levels between the container and the value (0, or 1 in arguments)


Replace = Callable[[int, Leaf], str]


def is_content(text: str) -> bool:
    return _CONTENT.search(text) is not None


class Walker:
    """Walks a JSON value, calling ``replace(index, leaf)`` for each leaf in a fixed order and
    building the value with the returned strings. ``opaque`` maps provider blobs."""

    def __init__(self, replace: Replace, opaque: Callable[[str], str]) -> None:
        self.replace = replace
        self.opaque = opaque
        self.count = 0

    def _leaf(self, text: str, depth: int) -> str:
        i = self.count
        self.count += 1
        return self.replace(i, Leaf(text, depth))

    def walk(self, value: JSON, key: str | None = None) -> JSON:
        if isinstance(value, str):
            if key in STRUCTURAL_KEYS or not is_content(value):
                return value
            if key in OPAQUE_KEYS:
                return self.opaque(value)
            if key in JSON_STRING_KEYS:
                inner = self._json_text(value)
                if inner is not None:
                    return inner
            return self._leaf(value, 0)
        if isinstance(value, list):
            if key == "required":
                return value
            return [self.walk(v, key if key == "enum" else None) for v in value]
        if isinstance(value, dict):
            return {k: self.walk(v, k) for k, v in value.items()}
        return value

    def _json_text(self, text: str) -> str | None:
        """Replace the string values inside JSON text, keeping every other character."""
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(parsed, (dict, list)):
            return None
        out: list[str] = []
        pos = 0
        for m in _LITERAL.finditer(text):
            rest = text[m.end() :].lstrip()
            inner = m.group()[1:-1]
            if rest.startswith(":") or not is_content(inner):
                continue  # a key, or nothing to hide
            out.append(text[pos : m.start() + 1])
            out.append(self._leaf(inner, 1))
            pos = m.end() - 1
        out.append(text[pos:])
        return "".join(out)


def collect(value: JSON) -> list[Leaf]:
    leaves: list[Leaf] = []

    def keep(i: int, leaf: Leaf) -> str:
        leaves.append(leaf)
        return leaf.text

    Walker(keep, lambda s: s).walk(value)
    return leaves


def substitute(value: JSON, texts: list[str], opaque: Callable[[str], str]) -> JSON:
    """``value`` with leaf ``i`` replaced by ``texts[i]`` (same walk order as :func:`collect`)."""
    return Walker(lambda i, _leaf: texts[i], opaque).walk(value)


def _json_forms(text: str) -> list[str]:
    """``text`` as the inside of a JSON string literal: orjson's form, and the ASCII-only form
    the standard library falls back to (lone surrogates, huge integers elsewhere in a value)."""
    forms = [json.dumps(text, ensure_ascii=True)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]
    with contextlib.suppress(TypeError):
        forms.insert(0, orjson.dumps(text).decode()[1:-1])
    return forms


def escaped(text: str, depth: int) -> list[str]:
    """The forms a leaf can take in a rendering: as is, or JSON-escaped once or twice more."""
    forms = [text]
    level = [text]
    for _ in range(depth + 2):
        level = [f for t in level for f in _json_forms(t)]
        forms.extend(level)
    return list(dict.fromkeys(forms))


def pseudonym(key: bytes, text: str) -> str:
    return hashlib.blake2b(
        text.encode("utf-8", "surrogatepass"), key=key[:64], digest_size=16
    ).hexdigest()
