"""The coding agents agentx knows: how each one shows itself on the wire, and its session id.

One table, :data:`AGENTS`, checked against the recorded headers of every agent in
``tests/capture/fixtures/agents/`` (one fixture per agent and version, captured by
``scripts/agents/run_agents.sh``). An agent is recognised, in order, by

1. the command line of the process that owns the connection (``/proc``, Linux, loopback
   only), when it names an agent: the only sign of agents that send nothing of their own
   (aider sends the OpenAI Python SDK's User-Agent, pi's OpenAI-compatible providers the
   OpenAI JS SDK's, cline the AI SDK's), and the truer one where an agent's requests carry
   another's User-Agent (Kilo, a fork of opencode, sends some of its own as ``opencode/``);
2. a substring of its ``User-Agent`` (``claude-cli/``, ``GeminiCLI-tui/``, ``Kilo-Code/``...);
3. a header value (``originator: codex_exec``, ``x-app: cli``).

Session ids come from :data:`SESSION_HEADERS` (the first one present wins), without the prefix
of :data:`SESSION_PREFIXES` an agent puts before its session id on side calls (Kilo's title
call: ``title-ses_...``); the session a subagent's own session id was spawned from, from
:data:`PARENT_SESSION_HEADERS`. The ids some agents put in the body (Anthropic
``metadata.user_id``, Responses ``prompt_cache_key``) are read by
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
    session_prefixes: tuple[str, ...] = ()  # put before the session id on its side calls
    parent_session_headers: tuple[str, ...] = ()  # a subagent's: the session that spawned it


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
    Agent(  # before opencode: Kilo's CLI is a fork of it
        "kilo",
        user_agents=("kilo-code/",),
        programs=("kilo", "kilocode"),
        packages=("/@kilocode/",),
        session_headers=("x-session-id", "x-session-affinity"),
        session_prefixes=("title-",),
        parent_session_headers=("x-parent-session-id",),
    ),
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
    # cline's User-Agent is the AI SDK's (``ai-sdk/openai-compatible/...``): its process says
    Agent("cline", programs=("cline",), packages=("/@cline/",)),
    Agent("cursor", user_agents=("cursor",)),
)
AGENT_NAMES = tuple(a.name for a in AGENTS)

# Every session header of the table, in the table's order (the first one present wins).
SESSION_HEADERS: tuple[str, ...] = tuple(
    dict.fromkeys(h for a in AGENTS for h in a.session_headers)
)
SESSION_PREFIXES: tuple[str, ...] = tuple(
    dict.fromkeys(p for a in AGENTS for p in a.session_prefixes)
)
PARENT_SESSION_HEADERS: tuple[str, ...] = tuple(
    dict.fromkeys(h for a in AGENTS for h in a.parent_session_headers)
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
    if cmdline:
        paths, names = _programs(cmdline)
        for agent in AGENTS:
            if any(p in names for p in agent.programs) or any(
                s in path for s in agent.packages for path in paths
            ):
                return agent.name
    ua = headers.get("user-agent", "").lower()
    for agent in AGENTS:
        if any(s in ua for s in agent.user_agents):
            return agent.name
    for agent in AGENTS:
        for name, value in agent.headers:
            if value in headers.get(name, "").lower():
                return agent.name
    return None


def session_header(headers: Mapping[str, str]) -> str | None:
    """The session id an agent sent in a header (lower-case names), at most 200 characters,
    without a side call's prefix."""
    for name in SESSION_HEADERS:
        if v := headers.get(name, "").strip():
            for prefix in SESSION_PREFIXES:
                if v.startswith(prefix) and len(v) > len(prefix):
                    v = v[len(prefix) :]
                    break
            return v[:200]
    return None


def parent_session_header(headers: Mapping[str, str]) -> str | None:
    """The session that spawned a subagent's own session, as the agent sent it."""
    for name in PARENT_SESSION_HEADERS:
        if v := headers.get(name, "").strip():
            return v[:200]
    return None
