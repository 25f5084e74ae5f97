"""Build the bundled ``example`` trace: a small, realistic coding-agent trace (deterministic, seeded).

Five sessions on a made-up Python project ("ledgerlite"), in the shapes real agents send; their
text (the project's files, command output, prompts, tool schemas and the scripted turns) is data
in ``traces/source/``, read by example_content.py:

- S1 anthropic.messages (Claude-Code-like): fix a rounding bug, then a follow-up task after the
  user thinks for a while; plus a small title-generation side call (thread flagged side_call).
- S2 anthropic.messages: a refactor that delegates a search to a subagent (thread flagged
  subagent, its own system prompt, tools and model).
- S3 openai.chat (OpenCode-like tools): add a CLI flag.
- S4 openai.responses (Codex-like: instructions, function calls, reasoning items): add a test.
- S5 openai.chat: a longer session fixing lint and docs.

Requests carry a system prompt and tool schemas of a few thousand tokens, tool calls and tool
results (file contents, command output) and a growing history; rows carry plausible usage
(prompt/cached/cache-write/completion/reasoning tokens), timing (TTFB, TTFT, per-chunk offsets,
end) and think times. The largest request stays under 30K tokens (it is replayed against a CPU
vLLM in CI). Usage: ``python scripts/make_example_trace.py [-o OUT]``; the default OUT,
``traces/example.parquet``, is the bundled file, rebuilt byte for byte (the build copies it into
the package: setup.py).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentx.apis import Api
from agentx.core.flags import FLAG_SIDE_CALL, FLAG_SUBAGENT
from agentx.core.models import Credential, Exchange, Response, Timing, Usage
from agentx.prefixcache import tokens
from agentx.store import write_trace

sys.path.insert(0, str(Path(__file__).parent))
from example_content import Turn, load

OUT = Path(__file__).resolve().parents[1] / "traces" / "example.parquet"
SEED = 20250601
MAX_PROMPT_TOKENS = 30_000
T0_NS = 1_748_772_000 * 10**9  # 2025-06-01T10:00:00Z
CREATED_AT = "2025-06-01T12:00:00+00:00"


@dataclass
class Clock:
    """Per-session wall clock in ns, with the server's latency model."""

    rng: random.Random
    now_ns: int

    def exchange_timing(self, uncached: int, completion: int, decode_tps: float) -> Timing:
        ttfb = int((0.18 + self.rng.random() * 0.25 + uncached / 9000) * 1e9)
        ttft = ttfb + int(self.rng.uniform(0.01, 0.06) * 1e9)
        per_token = 1e9 / decode_tps
        offsets = [ttft]
        t = float(ttft)
        for _ in range(max(1, completion // 4) - 1):  # one SSE chunk per ~4 tokens
            t += 4 * per_token * self.rng.uniform(0.7, 1.4)
            offsets.append(int(t))
        e2e = int(t + self.rng.uniform(0.005, 0.03) * 1e9)
        return Timing(
            start_wall_ns=self.now_ns,
            ttfb_ns=ttfb,
            ttft_ns=ttft,
            e2e_ns=e2e,
            chunk_offsets_ns=tuple(offsets),
        )


@dataclass
class Thread:
    """One conversation: renders its turns in its API's own shape and records exchanges."""

    api: str
    session: str
    thread: str
    model: str
    agent: str
    client: str
    rng: random.Random
    clock: Clock
    base: dict[str, Any]  # model, system/instructions, tools, params
    flags: tuple[str, ...] = ()
    conv: list[Any] = field(default_factory=list)
    out: list[Exchange] = field(default_factory=list)
    last_prompt: int = 0
    last_end_ns: int | None = None
    decode_tps: float = 60.0
    reasoning: bool = False

    def _id(self, prefix: str, n: int = 24) -> str:
        return prefix + "".join(
            self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n)
        )

    def user(self, text: str) -> None:
        if self.api == Api.ANTHROPIC_MESSAGES:
            self.conv.append({"role": "user", "content": [{"type": "text", "text": text}]})
        elif self.api == Api.OPENAI_CHAT:
            self.conv.append({"role": "user", "content": text})
        else:
            self.conv.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                }
            )

    def _body(self) -> dict[str, Any]:
        conv = json.loads(json.dumps(self.conv))  # a fresh tree per request, as the wire gives
        if self.api == Api.ANTHROPIC_MESSAGES:  # the cache marker moves to the newest block
            last = conv[-1]["content"][-1]
            last["cache_control"] = {"type": "ephemeral"}
        key = "input" if self.api == Api.OPENAI_RESPONSES else "messages"
        body = {"model": self.base["model"], key: conv}
        body.update({k: v for k, v in self.base.items() if k != "model"})
        return json.loads(json.dumps(body))

    def _usage(self, prompt: int, completion: int, reasoning: int | None) -> Usage:
        if self.api == Api.ANTHROPIC_MESSAGES:
            # a 5-minute cache: what the previous request of this thread wrote is read back
            cached = self.last_prompt if self.last_prompt and self.rng.random() > 0.05 else 0
            return Usage(
                prompt_tokens=prompt,
                cached_tokens=cached,
                cache_creation_tokens=prompt - cached,
                completion_tokens=completion,
            )
        cached = (self.last_prompt // 128) * 128 if self.last_prompt >= 1024 else 0
        return Usage(
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=completion,
            reasoning_tokens=reasoning,
        )

    def assistant(self, turn: Turn, think_s: float) -> list[tuple[str, str]]:
        """Send one request (after ``think_s``), record the exchange, append the answer.

        Returns the tool calls made, as (call id, tool name)."""
        if self.last_end_ns is not None:
            self.clock.now_ns = self.last_end_ns + int(think_s * 1e9)
        body = self._body()
        prompt = tokens.count_request_tokens(self.api, body) + 4 * len(self.conv) + 9
        if prompt > MAX_PROMPT_TOKENS:
            raise SystemExit(
                f"{self.session}/{self.thread}: a {prompt}-token request; keep them under {MAX_PROMPT_TOKENS}"
            )
        calls = [
            (
                self._id("toolu_" if self.api == Api.ANTHROPIC_MESSAGES else "call_"),
                call.tool,
                call.arguments,
            )
            for call in turn.calls
        ]
        reasoning_text = turn.thinking if self.reasoning else None
        completion = tokens.count_tokens(turn.text) + sum(
            tokens.count_tokens(json.dumps(a)) + 6 for _, _, a in calls
        )
        reasoning_tokens = (
            tokens.count_tokens(reasoning_text)
            if reasoning_text
            else (0 if self.api == Api.OPENAI_RESPONSES else None)
        )
        completion += reasoning_tokens or 0
        usage = self._usage(prompt, completion, reasoning_tokens)
        uncached = prompt - (usage.cached_tokens or 0)
        timing = self.clock.exchange_timing(uncached, completion, self.decode_tps)
        message, stop = self._answer(turn, calls, reasoning_text)
        n = len(self.out)
        rid = f"{self.thread}-{n:02d}"
        path = {
            Api.ANTHROPIC_MESSAGES: "/v1/messages",
            Api.OPENAI_CHAT: "/v1/chat/completions",
            Api.OPENAI_RESPONSES: "/v1/responses",
        }[self.api]
        self.out.append(
            Exchange(
                request_id=rid,
                session_id=self.session,
                thread_id=self.thread,
                api=self.api,
                request=body,
                timing=timing,
                trace_id="example",
                parent_request_id=self.out[-1].request_id if self.out else None,
                path=path,
                status=200,
                model=self.model,
                response=Response(
                    text=turn.text or None,
                    reasoning=reasoning_text,
                    tool_calls=tuple(
                        {"id": cid, "name": name, "arguments": json.dumps(args)}
                        for cid, name, args in calls
                    ),
                    stop_reason=stop,
                    message=message,
                ),
                usage=usage,
                think_time_s=round(think_s, 3) if self.last_end_ns is not None else None,
                client=self.client,
                agent=self.agent,
                credentials=(
                    Credential(
                        header="authorization"
                        if self.api != Api.ANTHROPIC_MESSAGES
                        else "x-api-key",
                        family="sk-ant-" if self.api == Api.ANTHROPIC_MESSAGES else "sk-proj-",
                        salted_hash=self._id("", 16),
                    ),
                ),
                flags=self.flags,
            )
        )
        self.last_prompt = prompt
        self.last_end_ns = timing.start_wall_ns + (timing.e2e_ns or 0)
        self.clock.now_ns = self.last_end_ns
        return [(cid, name) for cid, name, _ in calls]

    def _answer(
        self, turn: Turn, calls: list[tuple[str, str, Any]], reasoning: str | None
    ) -> tuple[Any, str]:
        if self.api == Api.ANTHROPIC_MESSAGES:
            content: list[Any] = [{"type": "text", "text": turn.text}] if turn.text else []
            content += [
                {"type": "tool_use", "id": cid, "name": name, "input": args}
                for cid, name, args in calls
            ]
            msg = {"role": "assistant", "content": content}
            self.conv.append(msg)
            return msg, "tool_use" if calls else "end_turn"
        if self.api == Api.OPENAI_CHAT:
            msg = {"role": "assistant", "content": turn.text or None}
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for cid, name, args in calls
                ]
            self.conv.append(msg)
            return msg, "tool_calls" if calls else "stop"
        items: list[Any] = []
        if reasoning:
            items.append(
                {
                    "type": "reasoning",
                    "id": self._id("rs_"),
                    "summary": [],
                    "encrypted_content": "gAAAAB" + self._id("", 120),
                }
            )
        if turn.text:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.text}],
                }
            )
        items += [
            {"type": "function_call", "call_id": cid, "name": name, "arguments": json.dumps(args)}
            for cid, name, args in calls
        ]
        self.conv.extend(items)
        return items, "completed"

    def tool_results(self, calls: list[tuple[str, str]], results: list[str]) -> None:
        if self.api == Api.ANTHROPIC_MESSAGES:
            blocks = [
                {"type": "tool_result", "tool_use_id": cid, "content": out}
                for (cid, _), out in zip(calls, results, strict=True)
            ]
            self.conv.append({"role": "user", "content": blocks})
        elif self.api == Api.OPENAI_CHAT:
            self.conv.extend(
                {"role": "tool", "tool_call_id": cid, "content": out}
                for (cid, _), out in zip(calls, results, strict=True)
            )
        else:
            self.conv.extend(
                {"type": "function_call_output", "call_id": cid, "output": out}
                for (cid, _), out in zip(calls, results, strict=True)
            )


def tool_seconds(rng: random.Random, name: str) -> float:
    """How long the agent spends running a tool before its next request."""
    slow = {"Bash": (1.5, 7.0), "bash": (1.5, 7.0), "shell": (1.5, 7.0)}
    lo, hi = slow.get(name, (0.04, 0.4))
    return rng.uniform(lo, hi) + rng.uniform(0.05, 0.3)  # plus the client's own overhead


def run_thread(th: Thread, turns: Sequence[Turn], first_think: float = 0.0) -> str:
    """Play a scripted thread; returns the final answer text."""
    think = first_think
    final = ""
    for turn in turns:
        if turn.user is not None:
            th.user(turn.user)
        calls = th.assistant(turn, think)
        final = turn.text
        if calls and turn.results:  # (a Task call's result comes from its subagent)
            th.tool_results(calls, turn.results)
            think = sum(tool_seconds(th.rng, name) for _, name in calls)
        else:
            think = turn.user_think_s
    return final


def anthropic_base(model: str, system: str, tools: list[Any], user_id: str) -> dict[str, Any]:
    return {
        "model": model,
        "system": [
            {
                "type": "text",
                "text": "You are Claude Code, a coding agent working in the user's repository.",
            },
            {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}},
        ],
        "tools": tools,
        "metadata": {"user_id": user_id},
        "max_tokens": 32000,
        "temperature": 1,
        "stream": True,
    }


def build(seed: int = SEED) -> list[Exchange]:
    rng = random.Random(seed)
    exchanges: list[Exchange] = []
    content = load()
    for spec in content.sessions:
        sid = spec.name
        clock = Clock(rng, T0_NS + spec.start_s * 10**9)
        api, agent = spec.api, spec.agent
        if api == Api.ANTHROPIC_MESSAGES:
            user_id = (
                "user_"
                + "".join(rng.choice("0123456789abcdef") for _ in range(16))
                + f"_session_{sid.lower()}"
            )
            base = anthropic_base(
                "claude-sonnet-4-5-20250929",
                content.system_prompt,
                content.claude_tools,
                user_id,
            )
            main = Thread(
                api,
                sid,
                f"{sid}/main",
                "claude-sonnet-4-5-20250929",
                agent,
                "claude-cli/2.0.14 (external, cli)",
                rng,
                clock,
                base,
                decode_tps=55.0,
            )
        elif api == Api.OPENAI_CHAT:
            base = {
                "model": spec.model,
                "tools": content.chat_tools,
                "tool_choice": "auto",
                "stream": True,
                "stream_options": {"include_usage": True},
                "max_tokens": 8192,
            }
            main = Thread(
                api,
                sid,
                f"{sid}/main",
                spec.model or "",
                agent,
                "opencode/0.15.2 ai-sdk/5.0",
                rng,
                clock,
                base,
                decode_tps=70.0,
            )
            main.conv.append({"role": "system", "content": content.system_prompt})
        else:
            base = {
                "model": "gpt-5-codex",
                "instructions": content.codex_instructions,
                "tools": content.codex_tools,
                "tool_choice": "auto",
                "parallel_tool_calls": False,
                "reasoning": {"effort": "medium", "summary": "auto"},
                "store": False,
                "stream": True,
                "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": f"{sid.lower()}-0197a3c2",
            }
            main = Thread(
                api,
                sid,
                f"{sid}/main",
                "gpt-5-codex",
                agent,
                "codex_cli_rs/0.46.0",
                rng,
                clock,
                base,
                decode_tps=80.0,
                reasoning=True,
            )
        if sid == "S1":  # the title side call, as Claude Code makes it
            side = Thread(
                api,
                sid,
                f"{sid}/title",
                "claude-haiku-4-5-20251001",
                agent,
                main.client,
                rng,
                clock,
                {
                    "model": "claude-haiku-4-5-20251001",
                    "system": [
                        {
                            "type": "text",
                            "text": "Summarize this coding conversation in under 50 characters. Capture the main task. Return JSON with a single 'title' field.",
                        }
                    ],
                    "max_tokens": 512,
                    "temperature": 0,
                    "stream": True,
                },
                flags=(FLAG_SIDE_CALL,),
                decode_tps=150.0,
            )
            side.user(spec.turns[0].user or "")
            side.assistant(Turn(text='{"title": "Fix tax rounding on invoice totals"}'), 0.0)
            exchanges += side.out
        if spec.subagent is not None:  # S2: the main thread hands a search to a subagent
            at = spec.subagent.after_turn + 1
            before, after = spec.turns[:at], spec.turns[at:]
            run_thread(main, before)
            task_call_id = main.out[-1].response.tool_calls[0]["id"]
            sub_base = anthropic_base(
                "claude-haiku-4-5-20251001",
                content.subagent_system,
                content.subagent_tools(spec.subagent.tools),
                base["metadata"]["user_id"],
            )
            sub_clock = Clock(rng, (main.last_end_ns or 0) + int(0.35e9))
            sub = Thread(
                api,
                sid,
                f"{sid}/agent-1",
                "claude-haiku-4-5-20251001",
                agent,
                main.client,
                rng,
                sub_clock,
                sub_base,
                flags=(FLAG_SUBAGENT,),
                decode_tps=140.0,
            )
            report = run_thread(sub, spec.subagent.turns)
            main.tool_results([(task_call_id, "Task")], [report])
            main.last_end_ns = sub.last_end_ns
            run_thread(main, after, first_think=0.4)
            exchanges += sub.out
        else:
            run_thread(main, spec.turns)
        exchanges += main.out
    exchanges.sort(key=lambda ex: ex.timing.start_wall_ns)
    return exchanges


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default=str(OUT))
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    exchanges = build(args.seed)
    out = Path(args.out)
    write_trace(
        out,
        exchanges,
        trace_id="example",
        metadata={"generator": "scripts/make_example_trace.py", "seed": str(args.seed)},
        created_at=CREATED_AT,
    )
    prompts = [ex.usage.prompt_tokens or 0 for ex in exchanges]
    print(
        f"{out}: {len(exchanges)} exchanges, {len({ex.session_id for ex in exchanges})} sessions, "
        f"{len({ex.thread_id for ex in exchanges})} threads, largest request {max(prompts):,} tokens, "
        f"{out.stat().st_size / 1024:.0f} KiB"
    )


if __name__ == "__main__":
    main()
