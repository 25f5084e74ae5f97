"""A scripted model upstream that real coding agents can drive through `agentx capture`.

It speaks Anthropic Messages, OpenAI Chat and OpenAI Responses (see tests/capture/upstream.py)
and answers with calls to the agent's own shell tool for two turns, then a final text, so an
agent runs a short multi-turn tool loop without any real model:

    python scripts/agents/scripted_upstream.py [--gap 0.01]   # prints its URL

Every request is logged (path, a few headers, tool names, message count) to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from capture.upstream import Upstream

COMMANDS = ["echo 'agentx was here' > notes.txt && ls", "cat notes.txt"]


SUBAGENT_PROMPT = "Count the files in the current directory and report the number."


class AgentUpstream(Upstream):
    """Two shell-tool turns, then text. A prompt containing SUBAGENT first delegates to a
    subagent through Claude Code's ``Agent`` (formerly ``Task``) tool."""

    def choose_tool(
        self, api: str, names: list[str], turn: int, prompt: str = ""
    ) -> tuple[str, dict[str, Any]]:
        if "SUBAGENT" in prompt and turn == 0:
            for name in ("Agent", "Task"):
                if name in names:
                    return name, {
                        "description": "Count files",
                        "prompt": SUBAGENT_PROMPT,
                        "subagent_type": "general-purpose",
                    }
        cmd = COMMANDS[min(turn, len(COMMANDS) - 1)]
        if "exec" in names and "exec_command" not in names:  # Codex "code mode": JavaScript
            js = f"const r = await tools.exec_command({{cmd: {json.dumps(cmd)}}});\ntext(r);"
            return "exec", {"input": js}
        for name, args in (
            ("Bash", {"command": cmd, "description": "scripted step"}),
            ("shell_command", {"command": cmd}),
            ("exec_command", {"cmd": cmd}),
            ("shell", {"command": ["bash", "-lc", cmd]}),
            ("bash", {"command": cmd}),
        ):
            if name in names:
                return name, args
        return (names[0] if names else "run"), {"cmd": cmd}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gap", type=float, default=0.005)
    ap.add_argument("--port-file", default=None)
    args = ap.parse_args()
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
                tools = [
                    t.get("name") or t.get("function", {}).get("name") or t.get("type")
                    for t in b.get("tools") or []
                ]
                conv = b.get("messages") or b.get("input") or []
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
