"""Small traces for replay tests, built in memory and written with agentx.store.write_trace."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentx.apis import Api
from agentx.core.models import Exchange, Response, Timing, Usage
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
                api=Api.OPENAI_CHAT,
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
                api=Api.ANTHROPIC_MESSAGES,
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


def responses_session(session_id: str, *, turns: int = 3, output_tokens: int = 4) -> list[Exchange]:
    """A Codex-like thread of OpenAI Responses requests: ``instructions``, a function tool, and
    an ``input`` that grows by a ``function_call`` and its ``function_call_output`` a turn."""
    tools = [
        {
            "type": "function",
            "name": "shell",
            "description": "run a command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                "required": ["command"],
            },
        }
    ]
    items: list[dict[str, object]] = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"fix the tests of {session_id}"}],
        }
    ]
    out = []
    for k in range(turns):
        body = {
            "model": "gpt-5-codex",
            "instructions": SYSTEM,
            "input": list(items),
            "tools": tools,
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "store": False,
            "stream": True,
        }
        out.append(
            Exchange(
                request_id=f"{session_id}-{k}",
                session_id=session_id,
                thread_id="main",
                api=Api.OPENAI_RESPONSES,
                request=body,
                timing=Timing(start_wall_ns=T0 + k * 100_000_000, e2e_ns=50_000_000),
                path="/v1/responses",
                status=200,
                model="gpt-5-codex",
                usage=Usage(prompt_tokens=600 + 100 * k, completion_tokens=output_tokens),
            )
        )
        call = f"call_{session_id}_{k}"
        items.append(
            {
                "type": "function_call",
                "call_id": call,
                "name": "shell",
                "arguments": '{"command":["pytest","-q"]}',
            }
        )
        items.append({"type": "function_call_output", "call_id": call, "output": "ok " * 40})
    return out


def gemini_session(session_id: str, *, turns: int = 3, output_tokens: int = 4) -> list[Exchange]:
    """A gemini-cli-like thread: ``systemInstruction``, ``functionDeclarations``, and
    ``contents`` that grow by a ``functionCall`` and its ``functionResponse`` a turn."""
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "description": "read a file",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"path": {"type": "STRING"}},
                        "required": ["path"],
                    },
                }
            ]
        }
    ]
    contents: list[dict[str, object]] = [
        {"role": "user", "parts": [{"text": f"explain the code of {session_id}"}]}
    ]
    out = []
    for k in range(turns):
        body = {
            "systemInstruction": {"role": "user", "parts": [{"text": SYSTEM}]},
            "contents": list(contents),
            "tools": tools,
            "generationConfig": {"temperature": 0},
        }
        out.append(
            Exchange(
                request_id=f"{session_id}-{k}",
                session_id=session_id,
                thread_id="main",
                api=Api.GEMINI,
                request=body,
                timing=Timing(start_wall_ns=T0 + k * 100_000_000, e2e_ns=50_000_000),
                path="/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                status=200,
                model="gemini-2.5-pro",
                usage=Usage(prompt_tokens=600 + 100 * k, completion_tokens=output_tokens),
            )
        )
        call = {"name": "read_file", "args": {"path": f"src/{k}.py"}}
        contents.append({"role": "model", "parts": [{"functionCall": call}]})
        response = {"name": "read_file", "response": {"output": "line of code\n" * 30}}
        contents.append({"role": "user", "parts": [{"functionResponse": response}]})
    return out


def write(path: Path, exchanges: Sequence[Exchange]) -> Path:
    write_trace(path, exchanges)
    return path
