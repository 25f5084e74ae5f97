from __future__ import annotations

from typing import Any

from agentx.apis import Api
from agentx.capture.sessions.ids import session_hint
from agentx.capture.sessions.placement import Sessions
from agentx.core.models import Response

TOOLS = [{"name": "Bash", "input_schema": {}}]
S = 1_000_000_000


def user(text: str, cache: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def asst(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def body(msgs: list[Any], tools: Any = TOOLS, **kw: Any) -> dict[str, Any]:
    return {"model": "c", "system": "sys", "tools": tools, "messages": msgs, **kw}


class Loop:
    def __init__(self) -> None:
        self.s = Sessions()
        self.t = 0

    def call(
        self,
        rid: str,
        b: Any,
        hint: str | None = "sess",
        response: Response | None = None,
        api: str = Api.ANTHROPIC_MESSAGES,
        explicit: str | None = None,
    ) -> tuple[Any, tuple[str, ...]]:
        self.t += S
        p = self.s.place(rid, api, b, self.t, hint=hint, client_key="c", explicit_parent=explicit)
        self.t += S // 2
        flags = self.s.finish(rid, self.t, response or Response())
        return p, flags


def test_hints() -> None:
    assert session_hint({"x-claude-code-session-id": "abc"}, None) == "abc"
    uid = "user_9f_account_1a_session_0f0e0d0c-1111-2222-3333-444455556666"
    assert (
        session_hint({}, {"metadata": {"user_id": uid}}) == "0f0e0d0c-1111-2222-3333-444455556666"
    )
    assert (
        session_hint({}, {"metadata": {"user_id": '{"device_id": "d", "session_id": "s-json"}'}})
        == "s-json"
    )
    assert session_hint({}, {"metadata": {"user_id": "plain-user"}}) is None
    assert session_hint({"session_id": "codex-1"}, {"prompt_cache_key": "k"}) == "codex-1"
    assert session_hint({}, {"prompt_cache_key": "k"}) == "k"
    assert session_hint({"x-session-id": "ses_1", "x-session-affinity": "ses_1"}, {}) == "ses_1"
    assert session_hint({"x-opencode-session": "oc"}, {}) is None  # no agent sends it


def test_chain_with_moving_cache_markers_retry_and_fork() -> None:
    lp = Loop()
    m1 = [user("do it", cache=True)]
    p1, _ = lp.call("r1", body(m1))
    m2 = [user("do it"), asst("step"), user("result", cache=True)]
    p2, _ = lp.call("r2", body(m2))
    assert p2.parent_request_id == "r1" and p2.thread_id == p1.thread_id
    assert p2.think_time_s == 1.0  # previous end (t=1.5 s) to this start (t=2.5 s)
    p2b, _ = lp.call("r2b", body(m2))  # the same conversation again: a retry
    assert (
        p2b.parent_request_id == "r2" and p2b.flags == ("retry",) and p2b.thread_id == p1.thread_id
    )
    m3 = [*m2, asst("more"), user("next")]
    p3, _ = lp.call("r3", body(m3))
    assert p3.parent_request_id == "r2b" and p3.thread_id == p1.thread_id
    # the user rewinds: a second continuation of r2b starts a forked thread
    p4, _ = lp.call("r4", body([*m2, asst("more"), user("other way")]))
    assert p4.parent_request_id == "r2b" and p4.flags == ("fork",) and p4.thread_id != p1.thread_id
    assert lp.s.thread_count == 2 and lp.s.session_count == 1


def test_side_calls_subagents_and_compaction() -> None:
    lp = Loop()
    # the title call arrives first and has no tools: a side call once the main thread shows up
    title = body([user("fix the login bug")], tools=None, system="Write a title")
    lp.s.place("title", Api.ANTHROPIC_MESSAGES, title, 1, hint="sess", client_key="c")
    main, _ = lp.call("m1", body([user("fix the login bug")]))
    assert main.flags == () and main.parent_request_id is None
    assert lp.s.finish("title", 2, Response()) == ("side_call",)
    probe, _ = lp.call("probe", body([user("quota")], max_tokens=1))
    assert probe.flags == ("side_call",)
    # the main thread asks for a subagent through a Task tool call
    prompt = "Search the codebase for every caller of login() and report their files."
    spawn = Response(
        tool_calls=(
            {
                "id": "t1",
                "name": "Task",
                "arguments": f'{{"description": "find callers", "prompt": "{prompt}"}}',
            },
        )
    )
    m2 = [user("fix the login bug"), asst("looking"), user("r1")]
    p, _ = lp.call("m2", body(m2), response=spawn)
    assert p.parent_request_id == "m1"
    sub, _ = lp.call("sub1", body([user(prompt)], system="You are a subagent"))
    # the spawning turn is its parent, in another thread: the subagent starts 1 s after its end
    assert (
        sub.flags == ("subagent",)
        and sub.parent_request_id == "m2"
        and sub.think_time_s == 1.0
        and sub.thread_id != p.thread_id
    )
    sub2, _ = lp.call(
        "sub2", body([user(prompt), asst("found"), user("res")], system="You are a subagent")
    )
    assert sub2.parent_request_id == "sub1" and sub2.thread_id == sub.thread_id and sub2.flags == ()
    # compaction: a summary request with the whole conversation, then a new conversation quoting it
    summary = "The user asked to fix the login bug. " * 12
    comp, _ = lp.call(
        "c1",
        body([*m2, asst("ok"), user("Summarize the conversation.")]),
        response=Response(text=summary),
    )
    assert comp.parent_request_id == "m2"
    after, _ = lp.call("a1", body([user("Here is where we are:\n" + summary + "\nContinue.")]))
    assert after.flags == ("compaction",) and after.parent_request_id is None
    # a tool-less summary call that extends a tool-using thread is a side call with a parent
    side, _ = lp.call("s1", body([*m2, asst("ok"), user("title?")], tools=None))
    assert (
        side.flags == ("side_call",)
        and side.parent_request_id == "m2"
        and side.thread_id != p.thread_id
    )


def test_fallback_sessions_and_explicit_parent() -> None:
    lp = Loop()
    a, _ = lp.call("a", {"model": "m", "input": "hi"}, hint=None, api=Api.OPENAI_RESPONSES)
    b, _ = lp.call(
        "b",
        {"model": "m", "input": [{"role": "user", "content": "hi"}, {"type": "message"}]},
        hint=None,
        api=Api.OPENAI_RESPONSES,
    )
    assert (
        b.parent_request_id == "a"
        and b.session_id == a.session_id
        and a.session_id.startswith("s-")
    )
    c, _ = lp.call(
        "c",
        {"model": "m", "input": [{"type": "function_call_output"}]},
        hint=None,
        api=Api.OPENAI_RESPONSES,
        explicit="b",
    )
    assert c.parent_request_id == "b" and c.thread_id == a.thread_id
    # a different agent-provided session never adopts another session's conversation
    d, _ = lp.call("d", {"model": "m", "input": "hi"}, hint="other", api=Api.OPENAI_RESPONSES)
    assert d.parent_request_id is None and d.session_id == "other"


# -- agents that rewrite history (aider) ---------------------------------------------------------


def chat(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


SYSTEM = [
    chat("system", "You edit code with SEARCH/REPLACE blocks."),
    chat("user", "Example."),
    chat("assistant", "Example answer."),
]
REMINDER = "\n\nREMINDER"


def test_a_rewritten_tail_continues_the_thread_and_says_what_was_replaced() -> None:
    from agentx.apis import Api

    loop = Loop()
    first = {"model": "m", "messages": [*SYSTEM, chat("user", "Q" + REMINDER)]}
    p1, _ = loop.call("r1", first, hint=None, api=Api.OPENAI_CHAT, response=Response(text="A\n"))
    # aider: the reminder leaves the old question and goes to the new one; the answer is
    # re-sent stripped
    second = {
        "model": "m",
        "messages": [
            *SYSTEM,
            chat("user", "Q"),
            chat("assistant", "A"),
            chat("user", "Q2" + REMINDER),
        ],
    }
    p2, f2 = loop.call("r2", second, hint=None, api=Api.OPENAI_CHAT, response=Response(text="B"))
    assert p2.parent_request_id == "r1" and p2.thread_id == p1.thread_id
    assert p2.think_time_s is not None
    # the parent's rendering ends "<|user|>\nQ\n\nREMINDER\n"; the child keeps "<|user|>\nQ\n"
    assert f2 == ("history_rewritten", "replaced_chars=10")

    # aider's files block moves after the history: three of the parent's items are replaced
    files = [chat("user", "notes.txt:\n```\n```"), chat("assistant", "Ok.")]
    third = {
        "model": "m",
        "messages": [
            *SYSTEM,
            chat("user", "Q"),
            chat("assistant", "A"),
            chat("user", "Q2"),
            chat("assistant", "B"),
            *files,
            chat("user", "Q3" + REMINDER),
        ],
    }
    p3, f3 = loop.call("r3", third, hint=None, api=Api.OPENAI_CHAT)
    assert p3.parent_request_id == "r2" and p3.thread_id == p1.thread_id
    assert f3 == ("history_rewritten", "replaced_chars=10")  # "\nREMINDER\n" again

    # a conversation that shares the system prompt but not an answer is a thread of its own
    other = {
        "model": "m",
        "messages": [
            *SYSTEM,
            chat("user", "Unrelated."),
            chat("assistant", "Something else."),
            chat("user", "x"),
        ],
    }
    p4, f4 = loop.call("r4", other, hint=None, api=Api.OPENAI_CHAT)
    assert p4.parent_request_id is None and p4.thread_id != p1.thread_id and f4 == ()


def test_hit_rate_of_a_rewritten_thread_is_that_of_the_prompts_sent() -> None:
    """The incremental per-thread hasher re-renders what a child replaced: the same blocks as
    hashing every request from scratch."""
    from agentx.apis import Api
    from agentx.core.models import Exchange, Timing
    from agentx.prefixcache.cache import UnboundedPrefixCache
    from agentx.prefixcache.hashing import block_hashes
    from agentx.prefixcache.theory import HitRateMeter
    from agentx.prefixcache.tokens import request_tokens

    long = " ".join(f"word{i}" for i in range(300))
    bodies = [
        {"messages": [*SYSTEM, chat("user", long + REMINDER)]},
        {
            "messages": [
                *SYSTEM,
                chat("user", long),
                chat("assistant", "A"),
                chat("user", "Q2" + REMINDER),
            ]
        },
        {
            "messages": [
                *SYSTEM,
                chat("user", long),
                chat("assistant", "A"),
                chat("user", "Q2"),
                chat("assistant", "B"),
                chat("user", "Q3" + REMINDER),
            ]
        },
    ]
    meter = HitRateMeter(block_size=16)
    cache = UnboundedPrefixCache(16)
    for i, b in enumerate(bodies):
        ex = Exchange(f"r{i}", "s", "t", Api.OPENAI_CHAT, b, Timing(start_wall_ns=i))
        meter.observe(ex)
        toks = request_tokens(Api.OPENAI_CHAT, b)
        cache.observe(block_hashes(toks, 16), int(toks.size))
    assert meter.prompt_tokens == cache.prompt_tokens
    assert meter.hit_tokens == cache.hit_tokens > 0
