"""Sessions and threads: which agent session a request belongs to, and which conversation.

*Session*: the id the agent sends (a header of :data:`agentx.capture.agents.SESSION_HEADERS`:
``X-Claude-Code-Session-Id``, Codex's ``session_id``, opencode's ``x-session-id``...; the
``session_<uuid>`` part of Anthropic ``metadata.user_id``; a Responses ``prompt_cache_key``); without one, the session of the request it continues, else one per
client process (or client address and User-Agent) that ends after 30 idle minutes.

*Thread*: a request whose conversation (``messages``, or ``input`` for the Responses API,
ignoring ``cache_control`` markers) starts with an earlier request's whole conversation is that
request's child (``parent_request_id``) and continues its thread. Side calls
(:mod:`agentx.capture.sessions.side_calls`), subagents and compactions (a new conversation that
quotes an earlier response of the session) start new threads and are flagged. A second child of
the same request is a ``fork``; a request equal to its parent is a ``retry``. Think time is the
parent's response end to this request's start.

*Subagent*: a new conversation whose first prompt is an argument of a recent tool call of its
session (Claude Code's ``Agent``, cline's subagents), or one that starts a *new* session id with
exactly the ``prompt`` (or ``description``) of a recent tool call of the same agent and API
(opencode's and Kilo's ``task`` tool run the subagent under a session id of its own). Either way
the subagent's first request names the request whose answer made the call as its parent (the
spawning turn: another thread), and a new session id joins the caller's session.

Requests of another agent or API family never join a known agent's session by the client they
come from: without a session id, the session is per client process (or address and
User-Agent), and for a known agent per agent and API family too.

Agents that rewrite history (aider moves its file listing after the history and its reminder to
the newest user message) send a child that holds only a *prefix* of its parent's conversation,
then its parent's answer. Such a request continues the thread of the recent request that shares
the longest prefix with it and whose answer it repeats, flagged ``history_rewritten`` with
``replaced_chars=<n>``: the characters at the end of the parent's rendered conversation that
the child did not keep.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from agentx.apis.bodies import conversation, system_key
from agentx.capture.sessions.conversation import (
    answer_digest,
    assistant_digests,
    chain_hashes,
    digest,
    has_tools,
    replaced_tail,
)
from agentx.capture.sessions.ids import new_id
from agentx.capture.sessions.side_calls import asks_for_title, is_probe
from agentx.capture.sessions.spawns import ToolCall, ToolCalls, is_compaction, tool_calls
from agentx.core.flags import (
    FLAG_COMPACTION,
    FLAG_FORK,
    FLAG_HISTORY_REWRITTEN,
    FLAG_RETRY,
    FLAG_SIDE_CALL,
    FLAG_SUBAGENT,
    replaced_chars_flag,
)
from agentx.core.models import JSON, Response

IDLE_GAP_NS = 30 * 60 * 1_000_000_000
MAX_NODES = 16384
RECENT_BODIES = 32  # requests whose conversation is kept to match a rewritten history


@dataclass(slots=True)
class _Node:
    request_id: str
    session_id: str
    thread_id: str
    scope: tuple[str, str]
    agent: str | None
    key: bytes | None  # hash of the whole conversation
    sig: bytes  # system/instructions + tools
    start_ns: int
    parent: str | None
    root: bool
    tools: bool
    flags: list[str] = field(default_factory=list)
    end_ns: int | None = None
    continued: bool = False
    answer: bytes | None = None  # digest of the answer's text, once it has ended


@dataclass(slots=True)
class _Recent:
    """A recent request's conversation, kept to find a child that rewrote its end."""

    node: _Node
    items: list[JSON]
    chain: list[bytes]


@dataclass(slots=True)
class _Session:
    tools_seen: bool = False
    last_ns: int = 0
    texts: deque[str] = field(default_factory=lambda: deque(maxlen=16))  # long answers


@dataclass(frozen=True, slots=True)
class Placement:
    session_id: str
    thread_id: str
    parent_request_id: str | None
    think_time_s: float | None
    flags: tuple[str, ...]


class Sessions:
    """Places each request, in arrival order, into a session and a thread. Not thread-safe:
    one recorder thread owns it."""

    def __init__(self) -> None:
        self._nodes: OrderedDict[str, _Node] = OrderedDict()
        self._index: dict[tuple[tuple[str, str], bytes], list[_Node]] = {}
        self._sessions: dict[str, _Session] = {}
        # (client, API family, agent) -> (session, last start) of requests without a session id
        # (the family and agent are "" when the agent is not known)
        self._fallback: dict[tuple[str, str, str], tuple[str, int]] = {}
        # client -> the session of its latest request without a session id (for its non-model rows)
        self._client: dict[str, str] = {}
        self._joined: dict[str, str] = {}  # a subagent's own session id -> its caller's session
        self._recent: deque[_Recent] = deque(maxlen=RECENT_BODIES)
        self._calls = ToolCalls()
        self.thread_count = 0

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    def place(
        self,
        request_id: str,
        api: str,
        body: JSON,
        start_ns: int,
        *,
        hint: str | None,
        client_key: str,
        agent: str | None = None,
        explicit_parent: str | None = None,
        subagent: bool = False,
        parent_hint: str | None = None,
    ) -> Placement:
        """``hint``: the session id the agent sent; ``parent_hint``: the session it says a new
        session was spawned from (a subagent's); ``subagent``: the agent said the request is a
        subagent's."""
        items = conversation(api, body)
        chain = chain_hashes(items)
        sig = digest(
            [
                body.get(system_key(api)),
                body.get("tools"),
            ]
            if isinstance(body, dict)
            else None
        )
        scope = (api, hint or "")
        parent, retry = self._find_parent(scope, agent, chain, sig, explicit_parent)
        rewrite: list[str] = []
        if parent is None:
            found = self._find_rewritten(scope, agent, items, chain, sig)
            if found is not None:
                parent, replaced = found
                rewrite = [FLAG_HISTORY_REWRITTEN, replaced_chars_flag(replaced)]
        tools = has_tools(body)
        probe = is_probe(body)
        utility = probe or asks_for_title(api, body, tools=tools)
        spawner: ToolCall | None = None
        if (
            hint
            and parent is None
            and not utility
            and hint not in self._sessions
            and hint not in self._joined
        ):  # a new session id: a subagent's own, spawned by a tool call of another session?
            known = self._nodes.__contains__
            if parent_hint and parent_hint != hint:
                caller = self._joined.get(parent_hint, parent_hint)
                self._joined[hint] = caller
                subagent = True
                spawner = self._calls.spawning(
                    api, agent, items, known, caller
                ) or self._calls.in_session(caller, items)
            else:
                spawner = self._calls.spawning(api, agent, items, known)
                if spawner is not None:
                    self._joined[hint] = spawner.session_id

        # a known agent's requests of one API family: an unknown one's, by client alone
        fallback = (client_key, api, agent) if agent else (client_key, "", "")
        if hint:
            session_id = self._joined.get(hint, hint)
        elif parent is not None:
            session_id = parent.session_id
        else:
            session_id = self._fallback_session(fallback, start_ns)
        sess = self._sessions.setdefault(session_id, _Session())
        if not hint:
            self._fallback[fallback] = (session_id, start_ns)
            self._client[client_key] = session_id
        sess.last_ns = start_ns
        sess.tools_seen = sess.tools_seen or tools

        flags: list[str] = list(rewrite)
        think: float | None = None
        root = parent is None
        side_with_parent = parent is not None and (probe or (not tools and parent.tools))
        if parent is not None and not side_with_parent:
            if retry:
                flags.append(FLAG_RETRY)
                thread_id = parent.thread_id
            elif parent.continued:
                flags.append(FLAG_FORK)
                thread_id = self._new_thread()
            else:
                thread_id = parent.thread_id
                parent.continued = True
            if thread_id == parent.thread_id and parent.end_ns is not None:
                think = max(0.0, (start_ns - parent.end_ns) / 1e9)
        else:
            thread_id = self._new_thread()
            if side_with_parent or utility:
                flags.append(FLAG_SIDE_CALL)
            elif spawner is not None:
                flags.append(FLAG_SUBAGENT)
            elif items and is_compaction(sess.texts, items):
                flags.append(FLAG_COMPACTION)
            elif (spawner := self._calls.in_session(session_id, items)) is not None or subagent:
                flags.append(FLAG_SUBAGENT)  # or the agent said so (a header)
            if spawner is not None and spawner.request_id in self._nodes:
                # the spawning turn is the subagent's parent (another thread): it starts then
                spawner.taken = True
                parent = self._nodes[spawner.request_id]
                root = True
                if parent.end_ns is not None:
                    think = max(0.0, (start_ns - parent.end_ns) / 1e9)

        node = _Node(
            request_id=request_id,
            session_id=session_id,
            thread_id=thread_id,
            scope=scope,
            agent=agent,
            key=chain[-1] if chain else None,
            sig=sig,
            start_ns=start_ns,
            parent=parent.request_id if parent else None,
            root=root,
            tools=tools,
            flags=flags,
        )
        self._add(node)
        if items:
            self._recent.append(_Recent(node, items, chain))
        return self._placement(node, think)

    def _new_thread(self) -> str:
        self.thread_count += 1
        return new_id("t-")

    def _find_parent(
        self,
        scope: tuple[str, str],
        agent: str | None,
        chain: list[bytes],
        sig: bytes,
        explicit: str | None,
    ) -> tuple[_Node | None, bool]:
        if explicit is not None and explicit in self._nodes:
            return self._nodes[explicit], False
        for k in range(len(chain), 0, -1):
            cands = [c for c in self._index.get((scope, chain[k - 1]), ()) if _same(c, agent)]
            if not cands:
                continue
            same = [c for c in cands if c.sig == sig]
            if k == len(chain):
                if same:  # the same conversation again: a retry (or a duplicate call)
                    return same[-1], True
                continue
            return (same or cands)[-1], False
        return None, False

    def _find_rewritten(
        self,
        scope: tuple[str, str],
        agent: str | None,
        items: list[JSON],
        chain: list[bytes],
        sig: bytes,
    ) -> tuple[_Node, int] | None:
        """The recent request of ``scope`` whose answer ``items`` repeats after sharing the
        longest prefix with it (at least one item), and how many characters of its rendered
        conversation the child replaced."""
        answers: dict[bytes, int] | None = None
        best: tuple[int, _Recent] | None = None
        for rec in reversed(self._recent):
            node = rec.node
            if node.scope != scope or node.sig != sig or node.answer is None:
                continue
            if not _same(node, agent):
                continue
            if answers is None:
                answers = assistant_digests(items)
                if not answers:
                    return None
            at = answers.get(node.answer)
            if at is None:
                continue
            shared = 0
            limit = min(len(rec.chain), len(chain), at)
            while shared < limit and rec.chain[shared] == chain[shared]:
                shared += 1
            if shared and (best is None or shared > best[0]):
                best = (shared, rec)
        if best is None:
            return None
        shared, rec = best
        if rec.node.request_id not in self._nodes:
            return None
        return rec.node, replaced_tail(rec.items, items, shared)

    def uses_tools(self, session_id: str) -> bool:
        """Whether any request of the session so far offered the model tools."""
        sess = self._sessions.get(session_id)
        return sess is not None and sess.tools_seen

    def current_session(self, client_key: str) -> str | None:
        """The session a client without a session id is in now (for its non-model rows)."""
        return self._client.get(client_key)

    def _fallback_session(self, key: tuple[str, str, str], start_ns: int) -> str:
        prev = self._fallback.get(key)
        if prev is not None and start_ns - prev[1] <= IDLE_GAP_NS:
            return prev[0]
        return new_id("s-")

    def _add(self, node: _Node) -> None:
        self._nodes[node.request_id] = node
        if node.key is not None:
            self._index.setdefault((node.scope, node.key), []).append(node)
        while len(self._nodes) > MAX_NODES:
            _, old = self._nodes.popitem(last=False)
            if old.key is not None:
                lst = self._index.get((old.scope, old.key))
                if lst is not None:
                    lst[:] = [n for n in lst if n is not old]
                    if not lst:
                        del self._index[(old.scope, old.key)]

    def _placement(self, node: _Node, think: float | None) -> Placement:
        return Placement(
            session_id=node.session_id,
            thread_id=node.thread_id,
            parent_request_id=node.parent,
            think_time_s=think,
            flags=tuple(node.flags),
        )

    def finish(self, request_id: str, end_ns: int, response: Response) -> tuple[str, ...]:
        """Record the response's end; returns the request's final flags (a tool-less root is
        only known to be a side call once the session's tool-using thread has shown up)."""
        node = self._nodes.get(request_id)
        if node is None:
            return ()
        node.end_ns = end_ns
        sess = self._sessions.get(node.session_id)
        if sess is None:
            return tuple(node.flags)
        if node.root and not node.tools and sess.tools_seen and not node.flags:
            node.flags.append(FLAG_SIDE_CALL)
        if response.text:
            node.answer = answer_digest(response.text)
        for call in tool_calls(
            node.request_id, node.session_id, node.scope[0], node.agent, response.tool_calls
        ):
            self._calls.add(call)
        if response.text and len(response.text) >= 200:
            sess.texts.append(response.text)
        return tuple(node.flags)


def _same(node: _Node, agent: str | None) -> bool:
    """Whether ``node`` may be in a conversation with a request of ``agent``: the same agent,
    or one of them unknown."""
    return agent is None or node.agent is None or node.agent == agent
