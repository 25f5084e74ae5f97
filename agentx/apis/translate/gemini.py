"""Gemini generateContent -> chat.

A content is {"role": "user" | "model", "parts": [...]}. Gemini's function calls carry no id
the agent can rely on (gemini-cli answers with ids of its own), so a call and its response are
paired by name and order: the k-th call of ``name`` in a model turn and the k-th response of
``name`` in the next user turn both get the id ``call_<name>_<k>``.
"""

from __future__ import annotations

from typing import Any

from agentx.apis.provider_fields import PROVIDER_KEYS
from agentx.apis.translate.common import Message, dump, function_tool, text_of, tool_call
from agentx.core.models import JSON


def _gemini_part_text(part: dict[str, Any]) -> str | None:
    """The text a part puts in context (``None``: no text: a call, a response, a thought)."""
    if part.get("thought") or "functionCall" in part or "functionResponse" in part:
        return None
    if isinstance(part.get("text"), str):
        return str(part["text"])
    inline = part.get("inlineData") or part.get("fileData")
    if isinstance(inline, dict):
        mime = str(inline.get("mimeType") or "")
        return "[image]" if mime.startswith("image/") else "[file]"
    if isinstance(part.get("executableCode"), dict):
        return str(part["executableCode"].get("code") or "")
    if isinstance(part.get("codeExecutionResult"), dict):
        return str(part["codeExecutionResult"].get("output") or "")
    rest = {k: v for k, v in part.items() if k not in PROVIDER_KEYS}
    return dump(rest) if rest else None


def gemini_text(value: JSON) -> str:
    """A Gemini content (or its ``parts``, or a string) as one string, thoughts dropped."""
    if isinstance(value, str):
        return value
    parts = value.get("parts") if isinstance(value, dict) else value
    texts = []
    for part in parts if isinstance(parts, list) else ():
        text = _gemini_part_text(part) if isinstance(part, dict) else None
        if text is not None:
            texts.append(text)
    return "\n".join(texts)


def _gemini_response_text(response: JSON) -> str:
    """A functionResponse's ``response``: its one string field (``output``, ...) or JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (only,) = response.values()
        if isinstance(only, str):
            return only
    return response if isinstance(response, str) else dump(response)


def gemini_content(item: JSON) -> list[Message]:
    if not isinstance(item, dict):
        return [{"role": "user", "content": text_of(item)}]
    parts = [p for p in item.get("parts") or () if isinstance(p, dict)]
    seen: dict[str, int] = {}

    def call_id(name: str) -> str:
        k = seen.get(name, 0)
        seen[name] = k + 1
        return f"call_{name}_{k}"

    if item.get("role") == "model":
        calls = []
        for p in parts:
            fc = p.get("functionCall")
            if isinstance(fc, dict):
                name = str(fc.get("name") or "")
                calls.append(tool_call(call_id(name), name, fc.get("args")))
        out: Message = {"role": "assistant", "content": gemini_text(parts)}
        if calls:
            out["tool_calls"] = calls
        return [out]
    messages: list[Message] = []
    for p in parts:  # tool results first: they must follow the assistant's tool calls
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            name = str(fr.get("name") or "")
            messages.append(
                {
                    "role": "tool",
                    "content": _gemini_response_text(fr.get("response")),
                    "tool_call_id": call_id(name),
                }
            )
    text = gemini_text([p for p in parts if "functionResponse" not in p])
    if text or not messages:
        messages.append({"role": "user", "content": text})
    return messages


def _lower_types(schema: JSON) -> JSON:
    """Gemini's OpenAPI-style schemas spell types in capitals (``OBJECT``): JSON Schema's way."""
    if isinstance(schema, dict):
        return {
            k: v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def gemini_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for fn in decls if isinstance(decls, list) else ():  # googleSearch & co: server tools
            if isinstance(fn, dict):
                params = fn.get("parametersJsonSchema", fn.get("parameters"))
                out.append(
                    function_tool(fn.get("name"), fn.get("description"), _lower_types(params))
                )
    return out
