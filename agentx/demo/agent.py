"""A scripted coding agent: the shape of Claude Code or Codex, without a model of its own.

It sends a system prompt and tool schemas, a task, and then loops like a real agent: whenever
the model answers with a tool call it "runs" the tool (deterministic output drawn from the
files of a directory) and sends the whole grown conversation again. It speaks OpenAI Chat or
Anthropic Messages, streaming, over plain HTTP, so it can sit behind ``agentx capture``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentx.apis import Api

SYSTEM_PROMPT = """You are a careful coding agent working in a Python repository.
Read files before editing them, run the tests after every change, and keep answers short.
Use the tools provided; never invent file contents. When the task is done, say so plainly.
"""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a UTF-8 text file from the repository and return its contents.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "repository-relative path"}},
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Search the repository for a regular expression; returns matching lines.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "glob": {"type": "string", "description": "file glob, e.g. **/*.py"},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run the test suite (or one test file) and return its output.",
        "input_schema": {
            "type": "object",
            "properties": {"target": {"type": "string"}},
        },
    },
]

TASKS = (
    "The trace reader is slow on large files. Find where rows are decoded and suggest a fix.",
    "Add a --json flag to the stats command and make sure the tests still pass.",
    "Explain how the prefix cache hit rate is computed, citing the code.",
)


@dataclass(frozen=True, slots=True)
class AgentResult:
    requests: int
    tool_calls: int


def _sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                yield orjson.loads(data)


class ScriptedAgent:
    """One agent session against ``base_url`` (e.g. the capture proxy)."""

    def __init__(
        self,
        base_url: str,
        *,
        api: str = Api.ANTHROPIC_MESSAGES,
        model: str = "agentx-sim",
        workdir: Path | None = None,
        turns: int = 8,
        seed: int = 0,
        think_time_s: float = 0.05,
        api_key: str = "sk-demo-not-a-real-key",
    ) -> None:
        self.api = api
        self.model = model
        self.turns = turns
        self.think_time_s = think_time_s
        self.rng = random.Random(seed)
        self.files = sorted((workdir or Path(__file__).parents[1]).rglob("*.py"))
        self.task = TASKS[seed % len(TASKS)]
        headers = (
            {"x-api-key": api_key}
            if api == Api.ANTHROPIC_MESSAGES
            else {"authorization": f"Bearer {api_key}"}
        )
        headers["user-agent"] = "agentx-demo-agent/1"
        headers["session-id"] = f"demo-{seed}"  # as Codex does: capture groups by it
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=60.0)

    def close(self) -> None:
        self.client.close()

    # --- tools -----------------------------------------------------------------------------
    def run_tool(self, name: str, args: dict[str, Any]) -> str:
        if not self.files:
            return "(empty repository)"
        f = self.files[self.rng.randrange(len(self.files))]
        text = f.read_text(errors="replace")
        if name == "grep":
            lines = [ln for ln in text.splitlines() if "def " in ln][:30]
            return "\n".join(f"{f.name}:{ln}" for ln in lines) or "no matches"
        if name == "run_tests":
            passed = self.rng.randrange(20, 200)
            return f"============ {passed} passed, 0 failed in {self.rng.uniform(1, 9):.2f}s ============"
        return text[:6000]

    # --- one model call ----------------------------------------------------------------------
    def _call_chat(self, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        body = {
            "model": self.model,
            "messages": messages,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["input_schema"],
                    },
                }
                for t in TOOLS
            ],
            "max_tokens": self.rng.randrange(64, 256),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        with self.client.stream("POST", "/v1/chat/completions", json=body) as r:
            r.raise_for_status()
            for ev in _sse_events(r.iter_lines()):
                for choice in ev.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                    for tc in delta.get("tool_calls") or []:
                        slot = calls.setdefault(
                            tc.get("index", 0), {"id": "", "name": "", "arguments": ""}
                        )
                        slot["id"] = tc.get("id") or slot["id"]
                        fn = tc.get("function") or {}
                        slot["name"] = fn.get("name") or slot["name"]
                        slot["arguments"] += fn.get("arguments") or ""
        return "".join(text), [calls[i] for i in sorted(calls)]

    def _call_messages(self, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        body = {
            "model": self.model,
            "system": [
                {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": messages,
            "tools": TOOLS,
            "max_tokens": self.rng.randrange(64, 256),
            "stream": True,
        }
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        with self.client.stream("POST", "/v1/messages", json=body) as r:
            r.raise_for_status()
            for ev in _sse_events(r.iter_lines()):
                kind = ev.get("type")
                if kind == "content_block_start":
                    block = ev.get("content_block") or {}
                    if block.get("type") == "tool_use":
                        calls.append(
                            {
                                "id": block.get("id", ""),
                                "name": block.get("name", ""),
                                "arguments": "",
                            }
                        )
                elif kind == "content_block_delta":
                    delta = ev.get("delta") or {}
                    if delta.get("type") == "text_delta":
                        text.append(delta.get("text", ""))
                    elif delta.get("type") == "input_json_delta" and calls:
                        calls[-1]["arguments"] += delta.get("partial_json", "")
        return "".join(text), calls

    # --- the loop ------------------------------------------------------------------------------
    def run(self) -> AgentResult:
        messages: list[dict[str, Any]] = []
        if self.api == Api.OPENAI_CHAT:
            messages.append({"role": "system", "content": SYSTEM_PROMPT})
        messages.append({"role": "user", "content": self.task})
        requests = tool_calls = 0
        for turn in range(self.turns):
            if turn:
                time.sleep(self.think_time_s * self.rng.uniform(0.5, 1.5))
            if self.api == Api.OPENAI_CHAT:
                text, calls = self._call_chat(messages)
            else:
                text, calls = self._call_messages(messages)
            requests += 1
            if not calls:  # the model answered in prose: the user nudges it on
                messages.append({"role": "assistant", "content": text or "Done."})
                messages.append({"role": "user", "content": "Keep going: check the tests too."})
                continue
            tool_calls += len(calls)
            self._append_tool_turn(messages, text, calls)
        return AgentResult(requests=requests, tool_calls=tool_calls)

    def _append_tool_turn(
        self, messages: list[dict[str, Any]], text: str, calls: list[dict[str, Any]]
    ) -> None:
        parsed = []
        for c in calls:
            try:
                args = orjson.loads(c["arguments"] or "{}")
            except orjson.JSONDecodeError:
                args = {}
            parsed.append((c, args if isinstance(args, dict) else {}))
        if self.api == Api.OPENAI_CHAT:
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"] or "{}"},
                        }
                        for c, _ in parsed
                    ],
                }
            )
            for c, args in parsed:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": c["id"],
                        "content": self.run_tool(c["name"], args),
                    }
                )
        else:
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            content += [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": args}
                for c, args in parsed
            ]
            messages.append({"role": "assistant", "content": content})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": c["id"],
                            "content": self.run_tool(c["name"], args),
                        }
                        for c, args in parsed
                    ],
                }
            )
