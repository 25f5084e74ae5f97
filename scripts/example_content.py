"""The example trace's content, read from ``traces/source/`` (see make_example_trace.py).

The content is data, one file per thing, all original text:

- ``project/``: the files of a made-up Python project, "ledgerlite", as they are on its disk;
- ``output/``: what commands printed in it (``git log``, ``pytest``, ``ruff``, ``rg``, ``tree``);
- ``prompts/``: the agents' system prompts (``system.md``: Claude Code and OpenCode alike,
  ``subagent.md``: the search subagent, ``codex.md``: Codex's instructions);
- ``tools/``: their tool schemas, as each API family declares them (``claude-code.json``:
  Anthropic Messages, ``opencode.json``: OpenAI chat, ``codex.json``: OpenAI Responses);
- ``sessions/S1.json`` ... ``S5.json``: the scripted sessions, turn by turn.

A tool result in a session is a piece or a list of pieces, concatenated: a string as it is;
``{"read": PATH}`` a project file as the Read tool shows it (numbered lines; ``"limit": N`` the
first N); ``{"file": PATH}`` a project file as it is; ``{"output": NAME}`` a command's output;
``{"numbered": TEXT, "start": N}`` a snippet as the Read tool shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parents[1] / "traces" / "source"


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One assistant turn: the user message before it (if any), the answer, its tool calls and
    the results the tools return; ``user_think_s`` is the pause before the next user message."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    results: tuple[str, ...] = ()
    user: str | None = None
    thinking: str | None = None
    user_think_s: float = 0.0


@dataclass(frozen=True)
class Subagent:
    """A subagent the main thread hands a task to, after turn ``after_turn`` (its Task call)."""

    after_turn: int
    tools: tuple[str, ...]  # names of the main thread's tools it gets
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Session:
    name: str
    api: str
    agent: str
    start_s: int  # seconds after the trace's first instant
    turns: tuple[Turn, ...]
    model: str | None = None  # when the API family's default model is not the one used
    subagent: Subagent | None = None


@dataclass(frozen=True)
class Content:
    system_prompt: str
    subagent_system: str
    codex_instructions: str
    claude_tools: list[dict[str, Any]]
    chat_tools: list[dict[str, Any]]
    codex_tools: list[dict[str, Any]]
    sessions: tuple[Session, ...]

    def subagent_tools(self, names: tuple[str, ...]) -> list[dict[str, Any]]:
        return [tool for tool in self.claude_tools if tool["name"] in names]


def numbered(text: str, start: int = 1) -> str:
    """File contents as a Read tool returns them: right-aligned line numbers and a tab."""
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.splitlines(), start=start))


def _text(path: Path) -> str:
    # bytes, not read_text(): the content is compared byte for byte, whatever the platform
    return path.read_bytes().decode("utf-8")


def _piece(source: Path, piece: Any) -> str:
    if isinstance(piece, str):
        return piece
    if isinstance(piece, list):
        return "".join(_piece(source, p) for p in piece)
    if "read" in piece:
        lines = _text(source / "project" / piece["read"]).splitlines()
        return numbered("\n".join(lines[: piece.get("limit", len(lines))]))
    if "file" in piece:
        return _text(source / "project" / piece["file"])
    if "output" in piece:
        return _text(source / "output" / piece["output"])
    if "numbered" in piece:
        return numbered(piece["numbered"], piece.get("start", 1))
    raise ValueError(f"unknown piece {piece!r}")


def _turn(source: Path, turn: dict[str, Any]) -> Turn:
    return Turn(
        text=turn.get("text", ""),
        calls=tuple(Call(c["tool"], c["arguments"]) for c in turn.get("calls", ())),
        results=tuple(_piece(source, r) for r in turn.get("results", ())),
        user=turn.get("user"),
        thinking=turn.get("thinking"),
        user_think_s=float(turn.get("user_think_s", 0.0)),
    )


def _session(source: Path, path: Path) -> Session:
    spec = json.loads(_text(path))
    sub = spec.get("subagent")
    return Session(
        name=path.stem,
        api=spec["api"],
        agent=spec["agent"],
        start_s=spec["start_s"],
        turns=tuple(_turn(source, t) for t in spec["turns"]),
        model=spec.get("model"),
        subagent=Subagent(
            after_turn=sub["after_turn"],
            tools=tuple(sub["tools"]),
            turns=tuple(_turn(source, t) for t in sub["turns"]),
        )
        if sub
        else None,
    )


def load(source: Path = SOURCE) -> Content:
    """Everything the generator needs, read from ``source``; sessions in name order."""
    return Content(
        system_prompt=_text(source / "prompts" / "system.md"),
        subagent_system=_text(source / "prompts" / "subagent.md"),
        codex_instructions=_text(source / "prompts" / "codex.md"),
        claude_tools=json.loads(_text(source / "tools" / "claude-code.json")),
        chat_tools=json.loads(_text(source / "tools" / "opencode.json")),
        codex_tools=json.loads(_text(source / "tools" / "codex.json")),
        sessions=tuple(_session(source, p) for p in sorted((source / "sessions").glob("S*.json"))),
    )
