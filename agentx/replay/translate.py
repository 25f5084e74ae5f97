"""Any captured API family -> OpenAI chat messages and tools, deterministically.

Same input, same output, byte for byte once serialised: a request's messages are a prefix of
its successor's, so the server's prefix cache sees what the agent's provider saw. Every content
becomes a plain string (chat templates of small open models concatenate strings), reasoning
blocks and provider-only fields (``cache_control``, signatures, encrypted reasoning) are dropped,
tool calls keep their ids so tool results still pair with them. Details: docs/replay.md.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentx.models import API_ANTHROPIC_MESSAGES, API_OPENAI_RESPONSES, JSON
from agentx.provider_fields import CACHE_MARKER_KEYS

Message = dict[str, Any]

_PLACEHOLDERS = {
    "image": "[image]",
    "image_url": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "input_file": "[file]",
    "file": "[file]",
    "document": "[document]",
}
_TEXT_TYPES = ("text", "input_text", "output_text", "refusal")


def _dump(value: JSON) -> str:
    return orjson.dumps(value).decode()


def text_of(content: JSON) -> str:
    """A content value (string, or list of parts/blocks of any family) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
                continue
            if not isinstance(part, dict):
                parts.append(_dump(part))
                continue
            kind = part.get("type")
            if kind in _TEXT_TYPES:
                parts.append(str(part.get("text", part.get("refusal", ""))))
            elif kind in _PLACEHOLDERS:
                parts.append(_PLACEHOLDERS[kind])
            elif kind in ("thinking", "redacted_thinking", "reasoning"):
                continue
            elif kind == "tool_result":
                parts.append(text_of(part.get("content")))
            else:
                parts.append(_dump({k: v for k, v in part.items() if k not in CACHE_MARKER_KEYS}))
        return "\n".join(parts)
    return _dump(content)


def _tool_call(call_id: str, name: str, arguments: JSON) -> Message:
    args = (
        arguments
        if isinstance(arguments, str)
        else _dump(arguments if arguments is not None else {})
    )
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


# -- OpenAI chat --------------------------------------------------------------------------------


def _chat_message(m: JSON) -> list[Message]:
    if not isinstance(m, dict):
        return [{"role": "user", "content": text_of(m)}]
    role = m.get("role") or "user"
    if role == "developer":
        role = "system"
    out: Message = {"role": role, "content": text_of(m.get("content"))}
    if role == "assistant" and m.get("tool_calls"):
        calls = []
        for i, call in enumerate(m["tool_calls"]):
            fn = call.get("function") or {}
            calls.append(
                _tool_call(call.get("id") or f"call_{i}", fn.get("name", ""), fn.get("arguments"))
            )
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = m.get("tool_call_id") or ""
    elif role == "function" and m.get("name"):
        out["name"] = m["name"]
    return [out]


def _chat_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            fn = tool.get("function") or tool
            out.append(_function_tool(fn.get("name"), fn.get("description"), fn.get("parameters")))
    return out


def _function_tool(name: Any, description: Any, parameters: Any) -> Message:
    fn: Message = {"name": str(name or "")}
    if description:
        fn["description"] = str(description)
    fn["parameters"] = (
        parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    )
    return {"type": "function", "function": fn}


# -- Anthropic messages ------------------------------------------------------------------------


def _anthropic_message(m: JSON) -> list[Message]:
    if not isinstance(m, dict):
        return [{"role": "user", "content": text_of(m)}]
    role = m.get("role") or "user"
    content = m.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": text_of(content)}]
    if role == "assistant":
        texts: list[JSON] = []
        calls = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.append(
                    _tool_call(block.get("id", ""), block.get("name", ""), block.get("input"))
                )
            else:
                texts.append(block)
        out: Message = {"role": "assistant", "content": text_of(texts)}
        if calls:
            out["tool_calls"] = calls
        return [out]
    messages: list[Message] = []
    rest: list[JSON] = []
    for block in content:  # tool results first: they must follow the assistant's tool calls
        if isinstance(block, dict) and block.get("type") == "tool_result":
            messages.append(
                {
                    "role": "tool",
                    "content": text_of(block.get("content")),
                    "tool_call_id": block.get("tool_use_id", ""),
                }
            )
        else:
            rest.append(block)
    if rest or not messages:
        messages.append({"role": role, "content": text_of(rest)})
    return messages


def _anthropic_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and "input_schema" in tool:  # server tools have no schema
            out.append(
                _function_tool(tool.get("name"), tool.get("description"), tool["input_schema"])
            )
    return out


# -- OpenAI responses --------------------------------------------------------------------------


def _responses_item(item: JSON) -> list[Message]:
    if isinstance(item, str):
        return [{"role": "user", "content": item}]
    if not isinstance(item, dict):
        return [{"role": "user", "content": _dump(item)}]
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return _chat_message({"role": item["role"], "content": item.get("content")})
    if kind == "reasoning":
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments", item.get("input", item.get("action")))
        call = _tool_call(
            str(item.get("call_id") or item.get("id") or ""), str(item.get("name") or kind), args
        )
        return [{"role": "assistant", "content": "", "tool_calls": [call]}]
    if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        return [
            {
                "role": "tool",
                "content": text_of(item.get("output")),
                "tool_call_id": item.get("call_id", ""),
            }
        ]
    return [{"role": "user", "content": _dump({k: v for k, v in item.items() if k != "id"})}]


def _merge_tool_calls(messages: list[Message]) -> list[Message]:
    """Consecutive assistant items (a message, then its function calls) -> one chat message."""
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and m["role"] == "assistant"
            and prev["role"] == "assistant"
            and m.get("tool_calls")
            and not m["content"]
        ):
            out[-1] = {**prev, "tool_calls": [*prev.get("tool_calls", ()), *m["tool_calls"]]}
        else:
            out.append(m)
    return out


def _responses_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            out.append(
                _function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))
            )
        elif tool.get("type") == "custom":
            out.append(_function_tool(tool.get("name"), tool.get("description"), None))
    return out


# -- entry points ------------------------------------------------------------------------------


def conversation_items(api: str, body: JSON) -> list[JSON]:
    """The request's growing list (``messages``, or ``input`` of the Responses API)."""
    if not isinstance(body, dict):
        return []
    items = body.get("input" if api == API_OPENAI_RESPONSES else "messages")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items) if isinstance(items, list) else []


def convert_item(api: str, item: JSON) -> list[Message]:
    """One conversation item of ``api`` as zero or more chat messages."""
    if api == API_ANTHROPIC_MESSAGES:
        return _anthropic_message(item)
    if api == API_OPENAI_RESPONSES:
        return _responses_item(item)
    return _chat_message(item)


def system_messages(api: str, body: JSON) -> list[Message]:
    """The family's out-of-band system prompt (Anthropic ``system``, Responses ``instructions``)."""
    if not isinstance(body, dict):
        return []
    if api == API_ANTHROPIC_MESSAGES:
        system = body.get("system")
    elif api == API_OPENAI_RESPONSES:
        system = body.get("instructions")
    else:
        return []
    text = text_of(system)
    return [{"role": "system", "content": text}] if text else []


def tools_of(api: str, body: JSON) -> list[Message]:
    tools = body.get("tools") if isinstance(body, dict) else None
    if api == API_ANTHROPIC_MESSAGES:
        return _anthropic_tools(tools)
    if api == API_OPENAI_RESPONSES:
        return _responses_tools(tools)
    return _chat_tools(tools)


def finish(api: str, fragments: list[list[Message]]) -> list[Message]:
    """Join per-item conversions into the message list (merging Responses tool calls)."""
    flat = [m for group in fragments for m in group]
    return _merge_tool_calls(flat) if api == API_OPENAI_RESPONSES else flat


def to_chat(api: str, body: JSON) -> tuple[list[Message], list[Message]]:
    """``(messages, tools)`` of ``body`` as OpenAI chat, system prompt first."""
    fragments = [system_messages(api, body)]
    fragments.extend(convert_item(api, item) for item in conversation_items(api, body))
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
        items = conversation_items(api, body)
        system = (
            body.get("system" if api == API_ANTHROPIC_MESSAGES else "instructions")
            if isinstance(body, dict)
            else None
        )
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
