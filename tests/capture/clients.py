"""Real SDK clients running multi-turn tool loops (used in-process and by agent_client.py)."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

ANT_TOOLS = [
    {
        "name": "bash",
        "description": "Run a shell command",
        "input_schema": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
        },
    }
]
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
RESP_TOOLS = [
    {
        "type": "function",
        "name": "exec",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]


def run_anthropic(
    base_url: str,
    key: str,
    prompt: str = "List the files.",
    *,
    beta: bool = False,
    max_turns: int = 6,
) -> int:
    """A Claude-Code-like loop with the streaming helper; returns the number of calls."""
    client = anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0)
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}],
        }
    ]
    api = client.beta.messages if beta else client.messages
    for n in range(1, max_turns + 1):
        # move the cache marker to the newest message, as Claude Code does
        with api.stream(
            model="claude-scripted",
            max_tokens=256,
            system=[{"type": "text", "text": "You are a scripted test agent."}],
            tools=ANT_TOOLS,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
            metadata={
                "user_id": "user_abc_account_def_session_0f0e0d0c-1111-2222-3333-444455556666"
            },
        ) as stream:
            msg = stream.get_final_message()
        messages = [_strip_cache(m) for m in messages]
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]}
        )
        uses = [b for b in msg.content if b.type == "tool_use"]
        if not uses:
            return n
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u.id,
                        "content": f"ok {n}",
                        "cache_control": {"type": "ephemeral"},
                    }
                    for u in uses
                ],
            }
        )
    return max_turns


def _strip_cache(m: dict[str, Any]) -> dict[str, Any]:
    c = m.get("content")
    if isinstance(c, list):
        return {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in c]}
    return m


def run_chat(base_url: str, key: str, prompt: str = "Build it.", *, max_turns: int = 6) -> int:
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a scripted test agent."},
        {"role": "user", "content": prompt},
    ]
    for n in range(1, max_turns + 1):
        stream = client.chat.completions.create(
            model="gpt-scripted",
            messages=messages,  # type: ignore[arg-type]
            tools=CHAT_TOOLS,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        for chunk in stream:
            for ch in chunk.choices:
                if ch.delta.content:
                    text.append(ch.delta.content)
                for tc in ch.delta.tool_calls or []:
                    slot = calls.setdefault(
                        tc.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function and tc.function.name:
                        slot["function"]["name"] += tc.function.name
                    if tc.function and tc.function.arguments:
                        slot["function"]["arguments"] += tc.function.arguments
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
        if calls:
            msg["tool_calls"] = [calls[i] for i in sorted(calls)]
        messages.append(msg)
        if not calls:
            return n
        for c in msg["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": f"ok {n}"})
    return max_turns


def run_responses(
    base_url: str, key: str, prompt: str = "Fix the bug.", *, chain: bool = True, max_turns: int = 6
) -> int:
    """``chain``: previous_response_id turns (server-side state); else full input each turn
    with ``store: false``, as Codex does."""
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    items: list[Any] = [{"role": "user", "content": prompt}]
    prev: str | None = None
    for n in range(1, max_turns + 1):
        kwargs: dict[str, Any] = {
            "model": "gpt-scripted",
            "tools": RESP_TOOLS,
            "instructions": "Scripted agent.",
            "stream": True,
        }
        if chain and prev:
            kwargs["previous_response_id"] = prev
            kwargs["input"] = items
        else:
            kwargs["input"] = items
            if not chain:
                kwargs["store"] = False
        final = None
        with client.responses.create(**kwargs) as stream:
            for ev in stream:
                if ev.type == "response.completed":
                    final = ev.response
        assert final is not None
        out = [o.model_dump(exclude_none=True) for o in final.output]
        calls = [o for o in out if o["type"] == "function_call"]
        if not calls:
            return n
        results = [
            {"type": "function_call_output", "call_id": c["call_id"], "output": f"ok {n}"}
            for c in calls
        ]
        if chain:
            prev = final.id
            items = results
        else:
            items = items + out + results
    return max_turns
