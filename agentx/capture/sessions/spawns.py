"""What a new conversation of a session is: a subagent (the run of a tool call an answer made)
or a compaction (a restart from a summary of the conversation so far).

A subagent's first prompt is an argument of the tool call that spawned it. Claude Code's
``Agent`` tool and cline's subagents stay in the caller's session: any argument of a recent
tool call of the session that the first prompt holds (or is part of). opencode's and Kilo's
``task`` tool run the subagent under a session id of its own: a new session whose first prompt
is *exactly* the ``prompt`` (or ``description``) of a recent tool call of the same agent and
API family, each call linked once (Kilo also names the caller's session in a header, and its
subagent's first message holds the prompt as its first text block).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from agentx.capture.sessions.conversation import first_user_parts, first_user_text, text_of
from agentx.core.models import JSON

MIN_PROMPT_CHARS = 16  # shorter tool arguments ("ls", a path) say nothing of a subagent
SESSION_CALLS = 64  # recent tool calls kept per session
RECENT_CALLS = 256  # recent tool calls with a prompt, of every session
_PROMPT_KEYS = ("prompt", "description")
_COMPACTION_MARKERS = (
    "continued from a previous conversation",
    "summary of the conversation so far",
    "conversation is summarized below",
)


@dataclass(slots=True)
class ToolCall:
    """A tool call an answer made: what a subagent's first prompt is matched against."""

    request_id: str  # the request whose answer made it
    session_id: str
    api: str
    agent: str | None
    args: tuple[str, ...]  # its argument strings, stripped
    prompts: frozenset[str]  # its ``prompt`` and ``description`` arguments, stripped
    taken: bool = False  # a new session was linked to it already


def tool_calls(
    request_id: str, session_id: str, api: str, agent: str | None, calls: Iterable[object]
) -> list[ToolCall]:
    """The tool calls of an answer that carry argument strings."""
    out = []
    for call in calls:
        raw = call.get("arguments") if isinstance(call, dict) else None
        if not isinstance(raw, str):
            continue
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = raw
        args: list[str] = []
        text_of(parsed, args)
        if not args:
            continue
        prompts: set[str] = set()
        if isinstance(parsed, dict):
            for key in _PROMPT_KEYS:
                v = parsed.get(key)
                if isinstance(v, str) and len(v.strip()) >= MIN_PROMPT_CHARS:
                    prompts.add(v.strip())
        out.append(
            ToolCall(
                request_id,
                session_id,
                api,
                agent,
                tuple(a.strip() for a in args),
                frozenset(prompts),
            )
        )
    return out


class ToolCalls:
    """Recent tool calls, per session and of every session."""

    def __init__(self) -> None:
        self._by_session: dict[str, deque[ToolCall]] = {}
        self._prompted: deque[ToolCall] = deque(maxlen=RECENT_CALLS)

    def add(self, call: ToolCall) -> None:
        self._by_session.setdefault(call.session_id, deque(maxlen=SESSION_CALLS)).append(call)
        if call.prompts:
            self._prompted.append(call)

    def in_session(self, session_id: str, items: list[JSON]) -> ToolCall | None:
        """The session's most recent tool call one of whose arguments the first prompt of
        ``items`` holds (or is part of)."""
        needle = first_user_text(items).strip()
        if len(needle) < MIN_PROMPT_CHARS:
            return None
        for call in reversed(self._by_session.get(session_id, ())):
            if any(len(a) >= MIN_PROMPT_CHARS and (a in needle or needle in a) for a in call.args):
                return call
        return None

    def spawning(
        self,
        api: str,
        agent: str | None,
        items: list[JSON],
        known: Callable[[str], bool],
        session_id: str | None = None,
    ) -> ToolCall | None:
        """The most recent tool call not linked yet, of the same agent and API family, of a
        request still ``known`` (and of ``session_id``, if given), whose ``prompt`` or
        ``description`` is exactly the first prompt of ``items``, or its first text block
        (Kilo appends its environment details as a second one)."""
        parts = first_user_parts(items)
        needles = {n for n in ("\n".join(parts).strip(), *parts[:1]) if n.strip()}
        needles = {n.strip() for n in needles if len(n.strip()) >= MIN_PROMPT_CHARS}
        if not needles:
            return None
        for call in reversed(self._prompted):
            if (
                not call.taken
                and not needles.isdisjoint(call.prompts)
                and (session_id is None or call.session_id == session_id)
                and call.api == api
                and call.agent == agent
                and known(call.request_id)
            ):
                return call
        return None


def is_compaction(texts: Iterable[str], items: list[JSON]) -> bool:
    """A new conversation that says it continues a summarised one, or quotes one of the
    session's long answers ``texts`` in its first items."""
    low = first_user_text(items).lower()
    if any(m in low for m in _COMPACTION_MARKERS):
        return True
    hay: str | None = None
    for text in texts:
        if hay is None:
            parts: list[str] = []
            text_of(items[:4], parts)
            hay = "\n".join(parts)
        n = len(text)
        probes = [text[int(n * f) : int(n * f) + 120] for f in (0.2, 0.5, 0.8)]
        if any(len(p) >= 60 and p in hay for p in probes):
            return True
    return False
