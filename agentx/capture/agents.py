"""The coding agents agentx knows: how each one shows itself on the wire, and its session id.

One table, :data:`AGENTS`, checked against the recorded headers of every agent in
``tests/capture/fixtures/agents/`` (one fixture per agent and version, captured by
``scripts/agents/run_agents.sh``). An agent is recognised, in order, by

1. a substring of its ``User-Agent`` (``claude-cli/``, ``GeminiCLI-tui/``, ``QwenCode/``...);
2. a header value (``originator: codex_exec``, ``x-app: cli``);
3. the command line of the process that owns the connection (``/proc``, Linux, loopback
   only): the only sign of agents that send nothing of their own (aider sends the OpenAI
   Python SDK's User-Agent, pi's OpenAI-compatible providers the OpenAI JS SDK's).

Session ids come from :data:`SESSION_HEADERS` (the first one present wins); the ids some agents
put in the body (Anthropic ``metadata.user_id``, Responses ``prompt_cache_key``) are read by
:func:`agentx.capture.sessions.ids.session_hint`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # the trace's ``agent`` value
    user_agents: tuple[str, ...] = ()  # lower-case substrings of the User-Agent
    headers: tuple[tuple[str, str], ...] = ()  # (header, lower-case substring of its value)
    programs: tuple[str, ...] = ()  # basenames of the executable or script in the command line
    packages: tuple[str, ...] = ()  # substrings of the script's path (its npm package)
    session_headers: tuple[str, ...] = ()  # headers that carry its session id


AGENTS: tuple[Agent, ...] = (
    Agent(
        "claude-code",
        user_agents=("claude-cli/", "claude-code"),
        headers=(("x-app", "cli"),),
        programs=("claude",),
        session_headers=("x-claude-code-session-id",),
    ),
    Agent(
        "codex",
        user_agents=("codex_", "codex/"),
        headers=(("originator", "codex"),),
        programs=("codex",),
        session_headers=("session_id", "session-id"),
    ),
    Agent(
        "gemini-cli",
        user_agents=("geminicli", "gemini-cli"),
        programs=("gemini",),
    ),
    Agent("qwen-code", user_agents=("qwencode",), programs=("qwen",)),
    Agent(
        "opencode",
        user_agents=("opencode/", "opencode"),
        programs=("opencode",),
        # custom providers (@ai-sdk/openai-compatible); built-in ones send session-id
        session_headers=("x-session-id", "x-session-affinity", "session-id"),
    ),
    Agent(
        "pi",
        user_agents=("pi-coding-agent",),
        programs=("pi",),
        packages=("/pi-coding-agent/",),
    ),
    Agent("aider", user_agents=("aider",), programs=("aider",)),
    Agent("cursor", user_agents=("cursor",)),
)
AGENT_NAMES = tuple(a.name for a in AGENTS)

# Every session header of the table, in the table's order (the first one present wins).
SESSION_HEADERS: tuple[str, ...] = tuple(
    dict.fromkeys(h for a in AGENTS for h in a.session_headers)
)


def _programs(cmdline: str) -> tuple[list[str], list[str]]:
    """The paths of the executable and of the script it runs (the first word, and the first
    word after it that is not an option), and their basenames without a script extension
    (``node .../bundle/gemini.js -p`` -> ``node``, ``gemini``)."""
    words = cmdline.split()
    paths = words[:1] + [w for w in words[1:4] if not w.startswith("-")][:1]
    names = []
    for w in paths:
        base = os.path.basename(w)
        stem, ext = os.path.splitext(base)
        names.append(stem if ext in (".js", ".mjs", ".cjs", ".py", ".exe") else base)
    return paths, names


def detect_agent(headers: Mapping[str, str], cmdline: str | None = None) -> str | None:
    """The agent that sent a request, from its headers (lower-case names) and the command line
    of the process that owns the connection (when known)."""
    ua = headers.get("user-agent", "").lower()
    for agent in AGENTS:
        if any(s in ua for s in agent.user_agents):
            return agent.name
    for agent in AGENTS:
        for name, value in agent.headers:
            if value in headers.get(name, "").lower():
                return agent.name
    if cmdline:
        paths, names = _programs(cmdline)
        for agent in AGENTS:
            if any(p in names for p in agent.programs) or any(
                s in path for s in agent.packages for path in paths
            ):
                return agent.name
    return None


def session_header(headers: Mapping[str, str]) -> str | None:
    """The session id an agent sent in a header (lower-case names), at most 200 characters."""
    for name in SESSION_HEADERS:
        if v := headers.get(name, "").strip():
            return v[:200]
    return None
