"""A request body as a vLLM-style server hands it to the chat template.

vLLM (``vllm/renderers/chat_utils.py``, 0.32) normalises OpenAI chat messages before rendering:
a content list becomes its text parts joined with ``"\\n"`` (for templates that read
``message.content`` as a string; templates that iterate over content parts get the parts),
``None`` content becomes ``""``, Claude Code's ``x-anthropic-billing-header`` line is dropped
from system text, assistant ``tool_calls`` keep only when non-empty and their ``arguments`` JSON
strings are parsed into objects, tool messages keep ``tool_call_id``, and each tool is
``{"type": "function", "function": {"name", "description", "parameters"[, "strict"]}}`` with
``description``/``parameters`` ``None`` when absent. A template that does not name the
``developer`` role sees those messages as ``system`` messages merged at the front.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson

from agentx.apis import Api
from agentx.core.models import JSON
from agentx.prefixcache.tokenizer.types import ToChat

ContentFormat = Literal["string", "openai"]
Message = dict[str, Any]

BILLING_HEADER = "x-anthropic-billing-header"
_TEXT_PARTS = ("text", "input_text", "output_text", "refusal")
# a template that loops over a message's content parts (vLLM inspects the jinja AST for this)
_ITERATES_CONTENT = re.compile(
    r"for\s+\w+\s+in\s+\w+\s*(?:\.content\b|\[\s*['\"]content['\"]\s*\])"
)


def content_format(template: str) -> ContentFormat:
    return "openai" if _ITERATES_CONTENT.search(template) else "string"


def _parts(content: JSON) -> list[JSON]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else [content]


def _text(part: JSON) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
        value = part.get("text", part.get("refusal"))
        return value if isinstance(value, str) else None
    return None


def _strip_billing(parts: list[JSON]) -> list[JSON]:
    out: list[JSON] = []
    for part in parts:
        text = _text(part)
        if text is None or not text.startswith(BILLING_HEADER):
            out.append(part)
            continue
        rest = text.partition("\n")[2]
        if rest:
            out.append(rest)
    return out


def _content(parts: list[JSON], fmt: ContentFormat) -> Any:
    if fmt == "openai":
        return [{"type": "text", "text": t} for t in map(_text, parts) if t is not None]
    return "\n".join(t for t in map(_text, parts) if t is not None)


def _arguments(value: Any) -> dict[str, Any]:
    if not value:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _tool_calls(calls: list[Any]) -> list[Any]:
    out = []
    for call in calls:
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            fn = dict(call["function"])
            fn["arguments"] = _arguments(fn.get("arguments"))
            call = {**call, "function": fn}
        out.append(call)
    return out


def message(m: JSON, fmt: ContentFormat) -> Message:
    """One chat message as the template sees it."""
    if not isinstance(m, dict):
        return {"role": "user", "content": _content(_parts(m), fmt)}
    role = m.get("role")
    parts = _parts(m.get("content"))
    if role == "system":
        parts = _strip_billing(parts)
    out: Message = {"role": role, "content": _content(parts, fmt)}
    if role == "assistant":
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls:
            out["tool_calls"] = _tool_calls(calls)
        reasoning = m.get("reasoning")
        if reasoning is not None:
            out["reasoning"] = out["reasoning_content"] = reasoning
    elif role == "tool" and "tool_call_id" in m:
        out["tool_call_id"] = m["tool_call_id"]
    if isinstance(m.get("name"), str):
        out["name"] = m["name"]
    return out


def tool(t: JSON) -> JSON:
    """A tool as vLLM's ``ChatCompletionToolsParam.model_dump()`` gives it to the template."""
    if not isinstance(t, dict) or not isinstance(t.get("function"), dict):
        return t
    fn = t["function"]
    out: dict[str, JSON] = {
        "name": fn.get("name"),
        "description": fn.get("description"),
        "parameters": fn.get("parameters"),
    }
    for key in ("strict", "defer_loading"):
        if fn.get(key) is not None:
            out[key] = fn[key]
    return {"type": "function", "function": out}


def _developer_as_system(messages: list[Message]) -> list[Message]:
    """vLLM's fallback for templates without a developer role: developer -> system, and the
    system messages merged (``"\\n\\n"``) into one at the front when one is not first or
    there are several."""
    converted = [
        {k: v for k, v in m.items() if k != "tools"} | {"role": "system"}
        if m["role"] == "developer"
        else m
        for m in messages
    ]
    system: list[str] = []
    rest: list[Message] = []
    merge = False
    for i, m in enumerate(converted):
        if m["role"] != "system":
            rest.append(m)
            continue
        if i > 0 or system:
            merge = True
        c = m.get("content", "")
        if isinstance(c, list):
            c = "\n".join(p["text"] for p in c if isinstance(p, dict) and "text" in p)
        if c:
            system.append(c)
    if not merge:
        return converted
    return [{"role": "system", "content": "\n\n".join(system)}, *rest]


def conversation(
    api: str, body: JSON, template: str, to_chat: ToChat | None
) -> tuple[list[Message], list[JSON] | None]:
    """``(messages, tools)`` for the template; ``tools`` is ``None`` when the request has none."""
    if api == Api.OPENAI_CHAT and isinstance(body, dict):
        raw_messages = body.get("messages")
        raw_tools = body.get("tools")
        messages_in = raw_messages if isinstance(raw_messages, list) else []
        tools_in = raw_tools if isinstance(raw_tools, list) else None
    elif to_chat is not None:
        messages_in, converted = to_chat(api, body)
        tools_in = converted or None
    else:
        raise ValueError(f"cannot render a {api} request with a chat template")
    fmt = content_format(template)
    messages = [message(m, fmt) for m in messages_in]
    if any(m["role"] == "developer" for m in messages) and not (
        '"developer"' in template or "'developer'" in template
    ):
        messages = _developer_as_system(messages)
    tools = None if tools_in is None else [tool(t) for t in tools_in]
    return messages, tools
