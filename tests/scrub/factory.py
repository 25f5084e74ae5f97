"""Realistic captured sessions for scrub / anonymize / export tests.

Anthropic Messages sessions (tools, a system prompt whose last line differs between sessions,
tool_use / tool_result turns, cache_control moving to the newest block, a thinking block with a
signature), OpenAI Chat sessions (tool_calls with JSON arguments, tool messages), and a
Responses API session (function_call / function_call_output items).
"""

from __future__ import annotations

import copy
import random
from typing import Any

from agentx.apis import Api
from agentx.core.models import Exchange, Response, Timing, Usage

WORDS = (
    "file",
    "parser",
    "the",
    "bug",
    "fails",
    "when",
    "input",
    "is",
    "empty",
    "fix",
    "test",
    "return",
    "value",
    "None",
    "list",
    "index",
    "error",
    "module",
    "import",
    "path",
)

TOOLS_ANTHROPIC = [
    {
        "name": "Bash",
        "description": "Runs a shell command.\n\nUsage:\n- Quote paths with spaces.\n- Prefer `rg` over `grep`.",
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "timeout": {"type": "number", "description": "Milliseconds"},
                "mode": {"type": "string", "enum": ["fast", "safe"]},
            },
            "required": ["command"],
        },
    },
    {
        "name": "Read",
        "description": "Reads a file from the local filesystem (up to 2000 lines).",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"],
        },
    },
]
TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {
            "name": t["name"],
            "description": t["description"],
            "parameters": t["input_schema"],
        },
    }
    for t in TOOLS_ANTHROPIC
]


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words) + rng.choice([".", "!", "\n", "", ".\n\n", ":"])


def _code(rng: random.Random, lines: int) -> str:
    return "".join(
        f"{i:>4}\tdef f{i}(x):\n\t    return x[{rng.randint(0, 9)}]  # {rng.choice(WORDS)}\n"
        for i in range(lines)
    )


def system_prompt(variant: str) -> str:
    base = (
        "You are an interactive CLI tool that helps users with software engineering tasks.\n"
        "IMPORTANT: Refuse to write malicious code.\n# Tone\nBe concise, direct, and to the point.\n"
    ) * 6
    return base + f"<env>\nWorking directory: /home/user/project\nToday's date: {variant}\n</env>"


def anthropic_session(
    rng: random.Random, session: str, turns: int, *, t0: int = 0, date: str = "2025-06-01"
) -> list[Exchange]:
    msgs: list[Any] = [{"role": "user", "content": [{"type": "text", "text": _text(rng, 12)}]}]
    out: list[Exchange] = []
    t = t0
    for i in range(turns):
        conv = copy.deepcopy(msgs)
        for m in conv:  # cache_control moves to the newest block
            if isinstance(m["content"], list):
                for b in m["content"]:
                    b.pop("cache_control", None)
        conv[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        body = {
            "model": "claude-sonnet-4",
            "max_tokens": 8192,
            "system": [
                {
                    "type": "text",
                    "text": system_prompt(date),
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            "tools": TOOLS_ANTHROPIC,
            "messages": conv,
            "stream": True,
        }
        tool_id = f"toolu_{session}_{i}"
        cmd = rng.choice(["ls -la", "cat src/parser.py", "pytest -q", 'rg "def parse" src/'])
        answer = _text(rng, 6)
        out.append(
            Exchange(
                request_id=f"{session}-{i}",
                session_id=session,
                thread_id=f"{session}/main",
                api=Api.ANTHROPIC_MESSAGES,
                request=body,
                timing=Timing(start_wall_ns=t, ttft_ns=400_000_000, e2e_ns=2_000_000_000),
                parent_request_id=out[-1].request_id if out else None,
                status=200,
                model="claude-sonnet-4",
                response=Response(
                    text=answer,
                    tool_calls=(
                        {"id": tool_id, "name": "Bash", "arguments": f'{{"command": "{cmd}"}}'},
                    ),
                    stop_reason="tool_use",
                ),
                usage=Usage(prompt_tokens=None, completion_tokens=rng.randint(20, 200)),
                think_time_s=None if i == 0 else 1.5,
                path="/v1/messages",
            )
        )
        t += 5_000_000_000
        assistant: list[Any] = [{"type": "text", "text": answer}]
        if i % 3 == 1:
            assistant.insert(
                0, {"type": "thinking", "thinking": _text(rng, 8), "signature": "c2lnbmF0dXJl" * 4}
            )
        assistant.append(
            {
                "type": "tool_use",
                "id": tool_id,
                "name": "Bash",
                "input": {"command": cmd, "timeout": 120000},
            }
        )
        msgs.append({"role": "assistant", "content": assistant})
        msgs.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": _code(rng, rng.randint(2, 30)),
                    }
                ],
            }
        )
    return out


def openai_session(rng: random.Random, session: str, turns: int, *, t0: int = 0) -> list[Exchange]:
    msgs: list[Any] = [
        {"role": "system", "content": system_prompt("2025-06-02")},
        {"role": "user", "content": _text(rng, 10)},
    ]
    out: list[Exchange] = []
    t = t0
    for i in range(turns):
        body = {
            "model": "gpt-4.1",
            "messages": copy.deepcopy(msgs),
            "tools": TOOLS_OPENAI,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        call_id = f"call_{session}_{i}"
        args = f'{{"file_path": "src/mod{i}.py", "note": "line \\"{i}\\""}}'
        out.append(
            Exchange(
                request_id=f"{session}-{i}",
                session_id=session,
                thread_id=f"{session}/main",
                api=Api.OPENAI_CHAT,
                request=body,
                timing=Timing(start_wall_ns=t, ttft_ns=300_000_000, e2e_ns=1_000_000_000),
                parent_request_id=out[-1].request_id if out else None,
                status=200,
                model="gpt-4.1",
                response=Response(
                    tool_calls=({"id": call_id, "name": "Read", "arguments": args},),
                    stop_reason="tool_calls",
                ),
                usage=Usage(prompt_tokens=None, completion_tokens=rng.randint(10, 80)),
                path="/v1/chat/completions",
            )
        )
        t += 3_000_000_000
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "Read", "arguments": args},
                    }
                ],
            }
        )
        msgs.append(
            {"role": "tool", "tool_call_id": call_id, "content": _code(rng, rng.randint(1, 12))}
        )
    return out


def responses_session(
    rng: random.Random, session: str, turns: int, *, t0: int = 0
) -> list[Exchange]:
    items: list[Any] = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": _text(rng, 9)}],
        }
    ]
    out: list[Exchange] = []
    t = t0
    for i in range(turns):
        body = {
            "model": "gpt-5-codex",
            "instructions": system_prompt("2025-06-03"),
            "input": copy.deepcopy(items),
            "tools": [
                {
                    "type": "function",
                    "name": "shell",
                    "description": "Run a command",
                    "parameters": {"type": "object"},
                }
            ],
            "stream": True,
        }
        call_id = f"fc_{session}_{i}"
        out.append(
            Exchange(
                request_id=f"{session}-{i}",
                session_id=session,
                thread_id=f"{session}/main",
                api=Api.OPENAI_RESPONSES,
                request=body,
                timing=Timing(start_wall_ns=t),
                parent_request_id=out[-1].request_id if out else None,
                status=200,
                model="gpt-5-codex",
                usage=Usage(completion_tokens=rng.randint(10, 80)),
                path="/v1/responses",
            )
        )
        t += 2_000_000_000
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{i}",
                "summary": [],
                "encrypted_content": "gAAAA" + "x" * 40,
            }
        )
        items.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "shell",
                "arguments": '{"cmd":["ls","-la"]}',
            }
        )
        items.append({"type": "function_call_output", "call_id": call_id, "output": _code(rng, 3)})
    return out


def capture(seed: int = 7) -> list[Exchange]:
    """A small multi-session capture in arrival order."""
    rng = random.Random(seed)
    exs = (
        anthropic_session(rng, "a", 6, t0=0, date="2025-06-01")
        + anthropic_session(rng, "b", 5, t0=1_000_000_000, date="2025-06-02")
        + openai_session(rng, "o", 4, t0=2_000_000_000)
        + responses_session(rng, "r", 3, t0=3_000_000_000)
    )
    return sorted(exs, key=lambda e: e.timing.start_wall_ns)
