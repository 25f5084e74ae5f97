"""OpenAI chat (kept as it is, normalised) and OpenAI Responses items -> chat messages."""

from __future__ import annotations

from agentx.apis.translate.common import Message, dump, function_tool, text_of, tool_call
from agentx.core.models import JSON


def chat_message(m: JSON) -> list[Message]:
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
                tool_call(call.get("id") or f"call_{i}", fn.get("name", ""), fn.get("arguments"))
            )
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = m.get("tool_call_id") or ""
    elif role == "function" and m.get("name"):
        out["name"] = m["name"]
    return [out]


def chat_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            fn = tool.get("function") or tool
            out.append(function_tool(fn.get("name"), fn.get("description"), fn.get("parameters")))
    return out


def responses_item(item: JSON) -> list[Message]:
    if isinstance(item, str):
        return [{"role": "user", "content": item}]
    if not isinstance(item, dict):
        return [{"role": "user", "content": dump(item)}]
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return chat_message({"role": item["role"], "content": item.get("content")})
    if kind == "reasoning":
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments", item.get("input", item.get("action")))
        call = tool_call(
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
    return [{"role": "user", "content": dump({k: v for k, v in item.items() if k != "id"})}]


def merge_tool_calls(messages: list[Message]) -> list[Message]:
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


def responses_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            out.append(
                function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))
            )
        elif tool.get("type") == "custom":
            out.append(function_tool(tool.get("name"), tool.get("description"), None))
    return out
