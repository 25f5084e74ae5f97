"""A scripted model upstream that real coding agents can drive through `agentx capture`.

It speaks Anthropic Messages, OpenAI Chat, OpenAI Responses and Gemini generateContent (see scripts/upstream.py)
and answers with calls to the agent's own shell tool for two turns, then a final text, so an
agent runs a short multi-turn tool loop without any real model:

    python scripts/agents/scripted_upstream.py [--gap 0.01]   # prints its URL

Every request is logged (path, a few headers, tool names, message count) to stderr; with
``--dump FILE`` each request is also appended to FILE as one JSON line (method, path, headers
with credential values replaced by ``REDACTED``, body): the raw material of the agent fixtures
in tests/capture/fixtures/agents/ (scripts/agents/make_fixtures.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/

from upstream import Upstream

SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
COMMANDS = ["echo 'agentx was here' > notes.txt && ls", "cat notes.txt"]


SUBAGENT_PROMPT = "Count the files in the current directory and report the number."


class AgentUpstream(Upstream):
    """Two shell-tool turns, then text. A prompt containing SUBAGENT first delegates to a
    subagent: Claude Code's ``Agent`` (formerly ``Task``) tool, opencode's and Kilo's ``task``,
    cline's ``spawn_agent``."""

    def choose_tool(
        self, api: str, names: list[str], turn: int, prompt: str = ""
    ) -> tuple[str, dict[str, Any]]:
        if "SUBAGENT" in prompt and turn == 0:
            for name, args in (
                ("Agent", {"subagent_type": "general-purpose"}),
                ("Task", {"subagent_type": "general-purpose"}),
                ("task", {"subagent_type": "general"}),
            ):
                if name in names:
                    return name, {"description": "Count files", "prompt": SUBAGENT_PROMPT, **args}
            if "spawn_agent" in names:
                return "spawn_agent", {
                    "systemPrompt": "You count files.",
                    "task": SUBAGENT_PROMPT,
                }
        cmd = COMMANDS[min(turn, len(COMMANDS) - 1)]
        if "exec" in names and "exec_command" not in names:  # Codex "code mode": JavaScript
            js = f"const r = await tools.exec_command({{cmd: {json.dumps(cmd)}}});\ntext(r);"
            return "exec", {"input": js}
        for name, args in (
            ("Bash", {"command": cmd, "description": "scripted step"}),
            ("run_shell_command", {"command": cmd, "description": "scripted step"}),
            ("shell_command", {"command": cmd}),
            ("exec_command", {"cmd": cmd}),
            ("shell", {"command": ["bash", "-lc", cmd]}),
            ("run_commands", {"commands": [cmd]}),  # cline
            ("bash", {"command": cmd, "description": "scripted step"}),
        ):
            if name in names:
                return name, args
        return (names[0] if names else "run"), {"cmd": cmd}

    def choose_text(self, messages: list[Any], text: str) -> str:
        """aider edits files with SEARCH/REPLACE blocks in its answer, not with tools: the
        first answer's block fails to match (aider reflects the error back: a second call in
        the same conversation), the second creates notes.txt."""
        system = " ".join(
            str(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") == "system"
        )
        if "SEARCH/REPLACE" not in system:
            return text
        last = self._last_user_text(messages)
        search = "" if "failed to match" in last else "a line that is not there\n"
        return (
            "I will write the note.\n\nnotes.txt\n```\n<<<<<<< SEARCH\n"
            f"{search}=======\nagentx was here\n>>>>>>> REPLACE\n```\n"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gap", type=float, default=0.005)
    ap.add_argument("--port-file", default=None)
    ap.add_argument("--dump", default=None, help="append every request to this JSONL file")
    args = ap.parse_args()
    dump = open(args.dump, "a") if args.dump else None  # noqa: SIM115 - lives as long as main
    up = AgentUpstream(gap_s=args.gap).start()
    if args.port_file:
        Path(args.port_file).write_text(up.url)
    print(up.url, flush=True)
    seen = 0
    stop = threading.Event()
    try:
        while not stop.wait(0.2):
            while seen < len(up.seen):
                s = up.seen[seen]
                seen += 1
                b = s.body if isinstance(s.body, dict) else {}
                if dump is not None:
                    headers = [
                        [k, "REDACTED" if k.lower() in SECRET_HEADERS else v]
                        for k, v in s.headers.items()
                    ]
                    dump.write(
                        json.dumps(
                            {"method": s.method, "path": s.path, "headers": headers, "body": s.body}
                        )
                        + "\n"
                    )
                    dump.flush()
                tools = [
                    t.get("name") or t.get("function", {}).get("name") or t.get("type")
                    for t in b.get("tools") or []
                    if "functionDeclarations" not in t
                ] + [
                    d.get("name")
                    for t in b.get("tools") or []
                    for d in t.get("functionDeclarations") or []
                ]
                conv = b.get("messages") or b.get("input") or b.get("contents") or []
                names = sorted(k.lower() for k in s.headers)
                ids = {
                    k: v
                    for k, v in s.headers.items()
                    if "session" in k.lower() or k.lower() in ("originator", "x-app")
                }
                print(
                    f"[upstream] {s.path} ua={s.headers.get('User-Agent', '')!r} ids={ids} headers={names} "
                    f"model={b.get('model')} max_tokens={b.get('max_tokens') or b.get('max_output_tokens')} "
                    f"stream={b.get('stream')} items={len(conv) if isinstance(conv, list) else 'str'} "
                    f"tools={tools[:12]}{'...' if len(tools) > 12 else ''}",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        pass
    up.stop()


if __name__ == "__main__":
    main()
