"""Small traces for replay tests, built in memory and written with agentx.store.write_trace."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentx.models import (
    API_ANTHROPIC_MESSAGES,
    API_OPENAI_CHAT,
    Exchange,
    Response,
    Timing,
    Usage,
)
from agentx.store import write_trace

T0 = 1_700_000_000_000_000_000
SYSTEM = "You are a careful coding agent. " * 40  # shared by every session (cacheable prefix)


def chat_session(
    session_id: str,
    *,
    turns: int = 3,
    output_tokens: int = 4,
    think_s: float = 0.0,
    start_ns: int = T0,
    thread_id: str = "main",
    user_text: str = "",
    flags: tuple[str, ...] = (),
    parent_request_id: str | None = None,
) -> list[Exchange]:
    """One thread of ``turns`` OpenAI-chat requests, each re-sending the growing conversation."""
    messages: list[dict[str, object]] = [{"role": "system", "content": SYSTEM}]
    out = []
    t = start_ns
    for k in range(turns):
        messages.append(
            {
                "role": "user",
                "content": f"{user_text}step {k} of session {session_id}: " + "do it. " * 30,
            }
        )
        body = {
            "model": "rec-model",
            "messages": list(messages),
            "max_tokens": 1000,
            "stream": True,
        }
        answer = f"answer {k} for {session_id}"
        out.append(
            Exchange(
                request_id=f"{session_id}-{thread_id}-{k}",
                session_id=session_id,
                thread_id=thread_id,
                api=API_OPENAI_CHAT,
                request=body,
                timing=Timing(start_wall_ns=t, ttft_ns=10_000_000, e2e_ns=50_000_000),
                path="/v1/chat/completions",
                status=200,
                model="rec-model",
                response=Response(text=answer),
                usage=Usage(prompt_tokens=100 + 50 * k, completion_tokens=output_tokens),
                think_time_s=think_s if k else None,
                flags=flags,
                parent_request_id=parent_request_id if k == 0 else None,
            )
        )
        messages.append({"role": "assistant", "content": answer})
        t += 50_000_000 + int(think_s * 1e9)
    return out


def anthropic_session(session_id: str, *, turns: int = 2, output_tokens: int = 4) -> list[Exchange]:
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    tools = [
        {
            "name": "Read",
            "description": "read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    messages: list[dict[str, object]] = []
    out = []
    for k in range(turns):
        if k == 0:
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"fix the bug in {session_id}"}],
                }
            )
        else:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"tu_{k - 1}",
                            "content": "file text " * 20,
                        }
                    ],
                }
            )
        body = {
            "model": "claude",
            "system": system,
            "tools": tools,
            "messages": list(messages),
            "max_tokens": 1000,
            "stream": True,
        }
        out.append(
            Exchange(
                request_id=f"{session_id}-{k}",
                session_id=session_id,
                thread_id="main",
                api=API_ANTHROPIC_MESSAGES,
                request=body,
                timing=Timing(start_wall_ns=T0 + k * 100_000_000, e2e_ns=50_000_000),
                path="/v1/messages",
                status=200,
                usage=Usage(prompt_tokens=500, completion_tokens=output_tokens),
                flags=("provider_fields",),
            )
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "let me read it"},
                    {
                        "type": "tool_use",
                        "id": f"tu_{k}",
                        "name": "Read",
                        "input": {"path": "a.py"},
                    },
                ],
            }
        )
    return out


def write(path: Path, exchanges: Sequence[Exchange]) -> Path:
    write_trace(path, exchanges)
    return path
