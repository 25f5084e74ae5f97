"""The scrub rules: each has a name, an action and a reason, and reports how often it fired.

Per-exchange tests live here; the streaming engine that applies them in order (and keeps the
cross-exchange state duplicates and retries need) is :mod:`agentx.scrub.pipeline`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import orjson

from agentx.apis import MODEL_APIS
from agentx.core.flags import FLAG_NON_MODEL, FLAG_SIDE_CALL, INCOMPLETE_FLAGS, UNPARSEABLE_FLAGS
from agentx.core.models import JSON, Exchange

DROP, REPAIR, FLAG, REDACT = "dropped", "repaired", "flagged", "redacted"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    action: str  # dropped | repaired | flagged | redacted
    reason: str


RULES: tuple[Rule, ...] = (
    Rule(
        "duplicate",
        DROP,
        "exact duplicate of an earlier exchange (same request id, or same request, response and start)",
    ),
    Rule("transport_error", DROP, "no HTTP response: connection refused or reset, timeout"),
    Rule("http_error", DROP, "non-2xx response status"),
    Rule("partial", DROP, "aborted or truncated stream"),
    Rule("unparseable", DROP, "request body is not a JSON object, or a body could not be parsed"),
    Rule("non_model", DROP, "not a model call: count_tokens, model list, health, telemetry"),
    Rule("side_call", DROP, "utility side call: title/topic generation, max_tokens=1 quota probe"),
    Rule(
        "retry", DROP, "client retry: same request body as the previous kept request of its thread"
    ),
    Rule("orphan_tools", DROP, "orphaned tool call/result that cannot be removed unambiguously"),
    Rule("over_max_context", DROP, "prompt longer than --max-context tokens"),
    Rule(
        "orphan_tools_repaired", REPAIR, "orphaned tool calls/results removed from the conversation"
    ),
    Rule("reparented", REPAIR, "parent was dropped: parent set to the nearest kept ancestor"),
    Rule(
        "provider_fields",
        FLAG,
        "provider-only fields (cache_control, signatures, encrypted reasoning) kept; flagged for replay to strip",
    ),
    Rule("secrets", REDACT, "secrets replaced by consistent placeholders"),
)
RULE_BY_NAME = {r.name: r for r in RULES}


def kept_flagged(name: str) -> Rule:
    """The non_model / side_call rule when the option keeps such rows, flagged."""
    base = RULE_BY_NAME[name]
    return Rule(base.name, FLAG, base.reason + " (kept, flagged)")


def response_rule(ex: Exchange) -> str | None:
    """transport_error | http_error | partial | unparseable, or None for a usable exchange."""
    if ex.status is None:
        if ex.error is not None:
            return "transport_error"
    elif not 200 <= ex.status < 300:
        return "http_error"
    if INCOMPLETE_FLAGS.intersection(ex.flags):
        return "partial"
    if UNPARSEABLE_FLAGS.intersection(ex.flags):
        return "unparseable"
    if ex.api in MODEL_APIS and ex.hash_ids is None and not isinstance(ex.request, dict):
        return "unparseable"
    return None


def is_non_model(ex: Exchange) -> bool:
    return ex.api not in MODEL_APIS or FLAG_NON_MODEL in ex.flags


def is_side_call(ex: Exchange) -> bool:
    """Flagged ``side_call``: capture's one rule (agentx.capture.sessions.side_calls) decided."""
    return FLAG_SIDE_CALL in ex.flags


def dumps(value: JSON) -> bytes:
    """JSON bytes of any value a trace can hold (lone surrogates and big integers included)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, sort_keys=False, separators=(",", ":")).encode()


K = TypeVar("K")
V = TypeVar("V")


class IdMemo[V]:
    """A bounded memo keyed by object identity. Traces read with ``shared=True`` hand out the
    same message objects for every request that repeats them, so per-message work is done once
    per message, not once per request. Entries hold their object, so an id is never reused
    while its entry lives."""

    def __init__(self, size: int = 16384) -> None:
        self._size = size
        self._data: OrderedDict[int, tuple[object, V]] = OrderedDict()

    def get(self, obj: object, compute: Callable[[object], V]) -> V:
        key = id(obj)
        hit = self._data.get(key)
        if hit is not None and hit[0] is obj:
            self._data.move_to_end(key)
            return hit[1]
        value = compute(obj)
        self._data[key] = (obj, value)
        if len(self._data) > self._size:
            self._data.popitem(last=False)
        return value
