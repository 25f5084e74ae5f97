"""Any captured API family -> OpenAI chat messages and tools, deterministically.

Same input, same output, byte for byte once serialised: a request's messages are a prefix of
its successor's, so the server's prefix cache sees what the agent's provider saw. Every content
becomes a plain string (chat templates of small open models concatenate strings), reasoning
blocks and provider-only fields (``cache_control``, signatures, encrypted reasoning) are dropped,
tool calls keep their ids so tool results still pair with them. Details: docs/replay.md.
"""

from __future__ import annotations

from agentx.apis.bodies import conversation, system_key
from agentx.apis.chat_parts import Message, text_of
from agentx.apis.registry import family
from agentx.core.models import JSON

__all__ = [
    "Message",
    "ThreadConverter",
    "convert_item",
    "finish",
    "system_messages",
    "text_of",
    "to_chat",
    "tools_of",
]


def convert_item(api: str, item: JSON) -> list[Message]:
    """One conversation item of ``api`` as zero or more chat messages."""
    return family(api).chat_messages(item)


def system_messages(api: str, body: JSON) -> list[Message]:
    """The family's out-of-band system prompt (Anthropic ``system``, Responses ``instructions``,
    Gemini ``systemInstruction``)."""
    if not isinstance(body, dict):
        return []
    fam = family(api)
    if fam.system_text is None:
        return []
    text = fam.system_text(body.get(fam.system_key))
    return [{"role": "system", "content": text}] if text else []


def tools_of(api: str, body: JSON) -> list[Message]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return family(api).chat_tools(tools)


def finish(api: str, fragments: list[list[Message]]) -> list[Message]:
    """Join per-item conversions into the message list (merging Responses tool calls)."""
    flat = [m for group in fragments for m in group]
    merge = family(api).merge_messages
    return merge(flat) if merge is not None else flat


def to_chat(api: str, body: JSON) -> tuple[list[Message], list[Message]]:
    """``(messages, tools)`` of ``body`` as OpenAI chat, system prompt first."""
    fragments = [system_messages(api, body)]
    fragments.extend(convert_item(api, item) for item in conversation(api, body))
    return finish(api, fragments), tools_of(api, body)


_UNSET = object()


class ThreadConverter:
    """Converts the successive requests of one thread, re-using the conversion of the prefix
    they share with the previous request (so a growing session costs O(new items) per turn)."""

    def __init__(self, api: str) -> None:
        self.api = api
        self._items: list[JSON] = []
        self._converted: list[list[Message]] = []
        self._system: object = _UNSET
        self._system_msgs: list[Message] = []

    def convert(self, body: JSON) -> tuple[list[Message], list[Message]]:
        api = self.api
        items = conversation(api, body)
        system = body.get(system_key(api)) if isinstance(body, dict) else None
        if system is not self._system and system != self._system:
            self._system = system
            self._system_msgs = system_messages(api, body)
        n = 0
        limit = min(len(items), len(self._items))
        old = self._items
        while n < limit and (items[n] is old[n] or items[n] == old[n]):
            n += 1
        converted = self._converted[:n]
        converted.extend(convert_item(api, item) for item in items[n:])
        self._items, self._converted = items, converted
        return finish(api, [self._system_msgs, *converted]), tools_of(api, body)
