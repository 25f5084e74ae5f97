"""Anthropic Messages -> chat: tool_use blocks become tool calls, tool_result blocks tool messages."""

from __future__ import annotations

from agentx.apis.translate.common import Message, function_tool, text_of, tool_call
from agentx.core.models import JSON


def anthropic_message(m: JSON) -> list[Message]:
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
                    tool_call(block.get("id", ""), block.get("name", ""), block.get("input"))
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


def anthropic_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and "input_schema" in tool:  # server tools have no schema
            out.append(
                function_tool(tool.get("name"), tool.get("description"), tool["input_schema"])
            )
    return out
