"""Orphaned tool calls and tool results in a request's conversation, and their repair.

A tool result whose call is not earlier in the conversation, or a call that the conversation
goes on past without answering, makes an OpenAI-compatible server (or its chat template) reject
the request. The repair removes exactly the orphaned entries; it is a pure function of the
message list, so every request of a thread repairs its shared history the same way and the
prefixes stay shared. When a removal would empty a message, or leave two messages of the same
role side by side where the API requires them to alternate, the repair is ambiguous and the
caller drops the exchange instead. How a family pairs calls with results is its
:class:`~agentx.apis.family.ToolPairs`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from agentx.apis.family import EMPTY, ToolPairs
from agentx.apis.registry import FAMILIES
from agentx.core.models import JSON


@dataclass(frozen=True, slots=True)
class ToolCheck:
    orphan_results: int  # results whose call is missing
    unanswered_calls: int  # calls the conversation went on past without a result
    repaired: list[JSON] | None  # the repaired conversation, or None when not repairable

    @property
    def ok(self) -> bool:
        return self.orphan_results == 0 and self.unanswered_calls == 0


def _ids(pairs: ToolPairs, msg: JSON) -> tuple[list[str], list[str]]:
    """(call ids, result ids) carried by one conversation item."""
    return pairs.ids(msg) if isinstance(msg, dict) else ([], [])


def check(api: str, conversation: list[JSON]) -> ToolCheck:
    """Find orphans in ``conversation`` (never modified) and build the repaired copy."""
    fam = FAMILIES.get(api)
    pairs = fam.tool_pairs if fam is not None else None
    if pairs is None:
        return ToolCheck(0, 0, None)
    per_msg = [_ids(pairs, m) for m in conversation]
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
    repaired = _repair(pairs, conversation, orphan_results, unanswered)
    return ToolCheck(len(orphan_results), len(unanswered), repaired)


def _repair(
    pairs: ToolPairs, conversation: list[JSON], orphans: set[tuple[int, str]], unanswered: set[str]
) -> list[JSON] | None:
    out: list[JSON] = []
    for i, msg in enumerate(conversation):
        new = _strip_message(pairs, msg, {r for j, r in orphans if j == i}, unanswered)
        if new is EMPTY:
            if not (isinstance(msg, dict) and pairs.drop_emptied(msg)):
                return None  # removing this message would restructure the conversation
            continue
        out.append(new)
    if pairs.alternating and _same_role_pairs(out) > _same_role_pairs(conversation):
        return None  # two turns of one role would now meet
    return out


def _strip_message(pairs: ToolPairs, msg: JSON, orphan_ids: set[str], unanswered: set[str]) -> JSON:
    if not isinstance(msg, dict):
        return msg
    return pairs.strip(msg, orphan_ids, unanswered)


def _same_role_pairs(conversation: list[JSON]) -> int:
    roles = [m.get("role") if isinstance(m, dict) else None for m in conversation]
    return sum(1 for a, b in itertools.pairwise(roles) if a == b)
