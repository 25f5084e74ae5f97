"""Orphaned tool calls and tool results in a request's conversation, and their repair.

A tool result whose call is not earlier in the conversation, or a call that the conversation
goes on past without answering, makes an OpenAI-compatible server (or its chat template) reject
the request. The repair removes exactly the orphaned entries; it is a pure function of the
message list, so every request of a thread repairs its shared history the same way and the
prefixes stay shared. When a removal would empty a message, or leave two messages of the same
role side by side where the API requires them to alternate, the repair is ambiguous and the
caller drops the exchange instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from agentx.apis import Api
from agentx.core.models import JSON

_CALL_ITEMS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
}
_RESULT_ITEMS = frozenset(_CALL_ITEMS.values())


@dataclass(frozen=True, slots=True)
class ToolCheck:
    orphan_results: int  # results whose call is missing
    unanswered_calls: int  # calls the conversation went on past without a result
    repaired: list[JSON] | None  # the repaired conversation, or None when not repairable

    @property
    def ok(self) -> bool:
        return self.orphan_results == 0 and self.unanswered_calls == 0


def _ids(api: str, msg: JSON) -> tuple[list[str], list[str]]:
    """(call ids, result ids) carried by one conversation item."""
    calls: list[str] = []
    results: list[str] = []
    if not isinstance(msg, dict):
        return calls, results
    if api == Api.OPENAI_RESPONSES:
        kind = msg.get("type")
        cid = msg.get("call_id")
        if isinstance(cid, str):
            if kind in _CALL_ITEMS:
                calls.append(cid)
            elif kind in _RESULT_ITEMS:
                results.append(cid)
        return calls, results
    if api == Api.OPENAI_CHAT:
        if msg.get("role") == "assistant" and isinstance(msg.get("tool_calls"), list):
            calls.extend(
                c["id"]
                for c in msg["tool_calls"]
                if isinstance(c, dict) and isinstance(c.get("id"), str)
            )
        if msg.get("role") == "tool" and isinstance(msg.get("tool_call_id"), str):
            results.append(msg["tool_call_id"])
        return calls, results
    content = msg.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                calls.append(block["id"])
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                results.append(block["tool_use_id"])
    return calls, results


def check(api: str, conversation: list[JSON]) -> ToolCheck:
    """Find orphans in ``conversation`` (never modified) and build the repaired copy."""
    if api not in (Api.OPENAI_CHAT, Api.ANTHROPIC_MESSAGES, Api.OPENAI_RESPONSES):
        return ToolCheck(0, 0, None)
    per_msg = [_ids(api, m) for m in conversation]
    called: set[str] = set()
    answered: set[str] = set()
    orphan_results: set[tuple[int, str]] = set()
    for i, (calls, results) in enumerate(per_msg):
        for r in results:
            if r in called:
                answered.add(r)
            else:
                orphan_results.add((i, r))
        called.update(calls)
    last_call_msg = {c: i for i, (calls, _) in enumerate(per_msg) for c in calls}
    end = len(conversation) - 1
    unanswered = {c for c, i in last_call_msg.items() if c not in answered and i < end}
    if not orphan_results and not unanswered:
        return ToolCheck(0, 0, None)
    repaired = _repair(api, conversation, orphan_results, unanswered)
    return ToolCheck(len(orphan_results), len(unanswered), repaired)


def _repair(
    api: str, conversation: list[JSON], orphans: set[tuple[int, str]], unanswered: set[str]
) -> list[JSON] | None:
    out: list[JSON] = []
    for i, msg in enumerate(conversation):
        new = _strip_message(api, msg, {r for j, r in orphans if j == i}, unanswered)
        if new is _EMPTY:
            if api != Api.OPENAI_RESPONSES and not _droppable(api, msg):
                return None  # removing this message would restructure the conversation
            continue
        out.append(new)
    if api == Api.ANTHROPIC_MESSAGES and _same_role_pairs(out) > _same_role_pairs(conversation):
        return None  # two turns of one role would now meet
    return out


_EMPTY: JSON = object()


def _droppable(api: str, msg: JSON) -> bool:
    """A whole OpenAI ``tool`` message may go; anything else emptied is ambiguous."""
    return api == Api.OPENAI_CHAT and isinstance(msg, dict) and msg.get("role") == "tool"


def _strip_message(api: str, msg: JSON, orphan_ids: set[str], unanswered: set[str]) -> JSON:
    if not isinstance(msg, dict):
        return msg
    if api == Api.OPENAI_RESPONSES:
        cid = msg.get("call_id")
        kind = msg.get("type")
        if (kind in _RESULT_ITEMS and cid in orphan_ids) or (
            kind in _CALL_ITEMS and cid in unanswered
        ):
            return _EMPTY
        return msg
    if api == Api.OPENAI_CHAT:
        if msg.get("role") == "tool" and msg.get("tool_call_id") in orphan_ids:
            return _EMPTY
        calls = msg.get("tool_calls")
        if msg.get("role") == "assistant" and isinstance(calls, list):
            kept = [c for c in calls if not (isinstance(c, dict) and c.get("id") in unanswered)]
            if len(kept) != len(calls):
                new = dict(msg)
                if kept:
                    new["tool_calls"] = kept
                else:
                    del new["tool_calls"]
                    if not new.get("content"):
                        return _EMPTY
                return new
        return msg
    content = msg.get("content")
    if not isinstance(content, list):
        return msg
    kept = [
        b
        for b in content
        if not (
            isinstance(b, dict)
            and (
                (b.get("type") == "tool_result" and b.get("tool_use_id") in orphan_ids)
                or (b.get("type") == "tool_use" and b.get("id") in unanswered)
            )
        )
    ]
    if len(kept) == len(content):
        return msg
    if not kept:
        return _EMPTY
    return {**msg, "content": kept}


def _same_role_pairs(conversation: list[JSON]) -> int:
    roles = [m.get("role") if isinstance(m, dict) else None for m in conversation]
    return sum(1 for a, b in itertools.pairwise(roles) if a == b)
