"""Side calls: the requests an agent sends beside its conversation (titles, topic checks, quota
probes, summaries). The one rule, applied when a request is placed; ``agentx scrub`` reads the
``side_call`` flag it leaves and has no rule of its own.

A request is a side call when it

- asks for at most one output token (a quota or reachability probe), or
- offers no tools, holds a short conversation (at most :data:`TITLE_ITEMS` items) and its
  system prompt, first or last message asks for a title or a topic (opencode's and Kilo's
  title agent, Claude Code's haiku title, Gemini's topic checks), or
- offers no tools but continues a conversation that did (a summary or title request built on
  the main thread), or
- is a tool-less first call in a session whose agent uses tools (only known once the session's
  tool-using thread shows up: :meth:`agentx.capture.sessions.placement.Sessions.finish`).
"""

from __future__ import annotations

import re

from agentx.apis.bodies import conversation, system_key
from agentx.apis.registry import max_output_tokens
from agentx.core.models import JSON
from agentx.prefixcache.tokens import render_content

TITLE_ITEMS = 4  # a title request quotes the first message or two, not a whole conversation
_TITLE = re.compile(
    r"\b(?:title generator|(?:write|generate|create|extract|suggest)\b[^.\n]{0,60}\btitle\b"
    r"|isNewTopic|new conversation topic|conversation title)",
    re.IGNORECASE,
)


def is_probe(body: JSON) -> bool:
    """At most one output token asked for."""
    mot = max_output_tokens(body)
    return mot is not None and mot <= 1


def asks_for_title(api: str, body: JSON, *, tools: bool) -> bool:
    """A tool-less request of a short conversation whose system prompt, first or last message
    asks for a title or a topic."""
    if tools or not isinstance(body, dict):
        return False
    items = conversation(api, body)
    if len(items) > TITLE_ITEMS:
        return False
    system = body.get(system_key(api))
    texts = [render_content(system)[:4000]] if system else []
    for msg in items[:1] + items[-1:]:
        if isinstance(msg, dict):
            texts.append(render_content(msg.get("content") or msg.get("parts"))[:2000])
    return any(_TITLE.search(t) for t in texts)
