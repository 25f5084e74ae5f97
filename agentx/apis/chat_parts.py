"""What every family's conversion shares: content as a string, tool calls, function tools."""

from __future__ import annotations

from typing import Any

import orjson

from agentx.apis.provider_fields import CACHE_MARKER_KEYS
from agentx.core.models import JSON

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


def dump(value: JSON) -> str:
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
                parts.append(dump(part))
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
                parts.append(dump({k: v for k, v in part.items() if k not in CACHE_MARKER_KEYS}))
        return "\n".join(parts)
    return dump(content)


def tool_call(call_id: str, name: str, arguments: JSON) -> Message:
    args = (
        arguments
        if isinstance(arguments, str)
        else dump(arguments if arguments is not None else {})
    )
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def function_tool(name: Any, description: Any, parameters: Any) -> Message:
    fn: Message = {"name": str(name or "")}
    if description:
        fn["description"] = str(description)
    fn["parameters"] = (
        parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    )
    return {"type": "function", "function": fn}
