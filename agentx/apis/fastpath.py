"""The byte-level fast path of a stream parser: the events of one stream that differ from an
event already decoded only in the bytes of one string value (a content delta: the same id,
model, creation time, keys and key order, another piece of text) are recognised by two byte
comparisons and a scan of that value, without a JSON decode.

A :class:`Slot` is learnt from one decoded event: its ``head`` is the event up to the value's
opening quote, its ``tail`` everything from the value's closing quote on. Learning proves the
slot: the event with a probe string in the slot must decode to the decoded event with the
probe at the value's path, so the slot is that value and nothing else (a repeated key, the same
bytes elsewhere in the event or a server that spells the value another way leave no slot).

Then any event ``head + X + tail`` whose ``X`` is a valid JSON string body decodes to the learnt
event with ``X``'s text at that path, because a JSON string ends at its first unescaped quote and
the rest of the event is the learnt bytes. :func:`slot_text` checks ``X``: printable ASCII
without quote or backslash passes one ``bytes.translate``; anything else (escapes, UTF-8) is
decoded as a string alone, and what does not decode (a stray quote, a raw control character,
invalid UTF-8) is left to the full decode, which rejects it as before. A wrong-shaped event never
matches: its bytes differ from the learnt ones outside the slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

# the bytes a string body may hold as they are: printable ASCII but the quote and the backslash
PLAIN = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')
PROBE = "agentx-probe"


@dataclass(frozen=True, slots=True)
class Slot:
    """One string value's place in a stream's events: ``head`` + the value's bytes + ``tail``."""

    head: bytes  # the event up to and including the value's opening quote
    tail: bytes  # the event from the value's closing quote on


def slot_text(body: bytes) -> str | None:
    """The text of a JSON string body (the bytes between its quotes), or None when ``body`` is
    not exactly one valid JSON string's body."""
    if not body.translate(None, PLAIN):
        return body.decode("ascii")
    try:
        text = orjson.loads(b'"' + body + b'"')
    except orjson.JSONDecodeError:
        return None
    return text if type(text) is str else None


def match(slot: Slot, event: bytes) -> str | None:
    """The slot's text in ``event``, or None when ``event`` is not the slot's event with another
    non-empty string in the slot. The parsers inline this in their loop."""
    if not (event.startswith(slot.head) and event.endswith(slot.tail)):
        return None
    body = event[len(slot.head) : len(event) - len(slot.tail)]
    if not body:
        return None
    return slot_text(body)


def learn(event: bytes, skip: int, obj: dict[str, Any], path: tuple[str | int, ...]) -> Slot | None:
    """The slot of the string at ``path`` in ``obj``, the decode of ``event[skip:]``; None when
    the event's bytes do not prove one (the value empty, spelt otherwise, or its bytes ambiguous)."""
    value = _at(obj, path)
    key = path[-1]
    if not (isinstance(value, str) and value and isinstance(key, str)):
        return None
    needle = orjson.dumps(key) + b":" + orjson.dumps(value)
    at = event.find(needle, skip)
    if at < 0 or event.find(needle, at + 1) >= 0:
        return None
    start = at + len(needle) - len(orjson.dumps(value)) + 1
    end = at + len(needle) - 1
    head, tail = event[:start], event[end:]
    try:
        probed = orjson.loads(event[skip:start] + PROBE.encode() + tail)
        expected = orjson.loads(event[skip:])
    except orjson.JSONDecodeError:
        return None
    parent = _at(expected, path[:-1])
    if not isinstance(parent, dict):
        return None
    parent[key] = PROBE
    if probed != expected:
        return None
    return Slot(head, tail)


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(step, int):
            if not (isinstance(obj, list) and len(obj) > step):
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj
