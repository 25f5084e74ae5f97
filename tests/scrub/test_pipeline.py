"""The scrub pipeline end to end: one injected fault per rule, idempotence, streaming I/O."""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from store.strategies import exchange_sequences

from agentx.apis import Api
from agentx.capture.sessions.placement import Sessions
from agentx.core.errors import UsageError
from agentx.core.flags import FLAG_PROVIDER_FIELDS, FLAG_REPAIRED, FLAG_SIDE_CALL
from agentx.core.flags import FLAG_SECRET_REDACTED as FLAG_REDACTED
from agentx.core.models import Exchange, Timing, Usage
from agentx.scrub import ScrubOptions, scrub_exchanges, scrub_trace
from agentx.scrub.rules import RULES
from agentx.store import read_trace, write_trace

from .factory import openai_session

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
MAX_CONTEXT = 5000


def _ex(
    rid: str,
    thread: str,
    body: object,
    t: int,
    *,
    api: str = Api.OPENAI_CHAT,
    status: int | None = 200,
    **kw: Any,
) -> Exchange:
    return Exchange(
        request_id=rid,
        session_id="f",
        thread_id=thread,
        api=api,
        request=body,
        timing=Timing(start_wall_ns=t),
        status=status,
        model="m",
        **kw,
    )


def _captured(ex: Exchange) -> Exchange:
    """The row with the flags capture's session placement gives its request (the side-call
    rule is capture's; scrub reads the flag)."""
    placed = Sessions().place(
        ex.request_id, ex.api, ex.request, ex.timing.start_wall_ns, hint=None, client_key="c"
    )
    return replace(ex, flags=(*ex.flags, *placed.flags))


def faulty_capture() -> tuple[list[Exchange], list[Exchange], dict[str, str]]:
    """(trace, its clean rows, {injected request id: the rule that must fire on it})."""
    rng = random.Random(3)
    clean = openai_session(rng, "o1", 4, t0=0) + openai_session(rng, "o2", 3, t0=10**9)
    clean.sort(key=lambda e: e.timing.start_wall_ns)
    good = clean[0]
    t = 10**12
    user = {"role": "user", "content": "hello"}
    faults: list[Exchange] = [
        replace(good),  # an exact duplicate (same request id)
        _ex(
            "x-transport",
            "x1",
            {"messages": [user]},
            t + 1,
            status=None,
            error="connection reset by peer",
        ),
        _ex("x-http", "x2", {"messages": [user]}, t + 2, status=529, error="overloaded"),
        _ex(
            "x-child",
            "x2b",
            {"messages": [user, {"role": "assistant", "content": "hi"}]},
            t + 3,
            parent_request_id="x-http",
        ),
        _ex("x-partial", "x3", {"messages": [user]}, t + 4, flags=("partial",)),
        _ex("x-unparseable", "x4", "{not json", t + 5),
        _ex(
            "x-count",
            "x5",
            {"messages": [user]},
            t + 6,
            api=Api.OTHER,
            path="/v1/messages/count_tokens",
        ),
        _captured(
            _ex(
                "x-title",
                "x6",
                {
                    "max_tokens": 64,
                    "system": "Generate a concise title for this conversation.",
                    "messages": [user],
                },
                t + 7,
                api=Api.ANTHROPIC_MESSAGES,
            )
        ),
        _ex("x-first", "x7", {"messages": [{"role": "user", "content": "run it"}]}, t + 8),
        _ex("x-retry", "x7", {"messages": [{"role": "user", "content": "run it"}]}, t + 9),
        _ex(
            "x-orphan",
            "x8",
            {
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "42"}
                        ],
                    },
                ]
            },
            t + 10,
            api=Api.ANTHROPIC_MESSAGES,
        ),
        _ex(
            "x-repair",
            "x9",
            {
                "messages": [
                    user,
                    {"role": "tool", "tool_call_id": "call_gone", "content": "stale"},
                    {"role": "user", "content": "again"},
                ]
            },
            t + 11,
        ),
        _ex(
            "x-long",
            "x10",
            {"messages": [{"role": "user", "content": "word " * (2 * MAX_CONTEXT)}]},
            t + 12,
        ),
        _ex(
            "x-provider",
            "x11",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": "cached",
                                "cache_control": {"type": "ephemeral"},
                            }
                        ],
                    }
                ]
            },
            t + 13,
            api=Api.ANTHROPIC_MESSAGES,
        ),
        _ex(
            "x-secret",
            "x12",
            {"messages": [{"role": "user", "content": f"token {SECRET} please"}]},
            t + 14,
        ),
    ]
    expected = {
        "x-transport": "transport_error",
        "x-http": "http_error",
        "x-partial": "partial",
        "x-unparseable": "unparseable",
        "x-count": "non_model",
        "x-title": "side_call",
        "x-retry": "retry",
        "x-orphan": "orphan_tools",
        "x-long": "over_max_context",
        "x-repair": "orphan_tools_repaired",
        "x-provider": "provider_fields",
        "x-secret": "secrets",
        "x-child": "reparented",
    }
    trace = [*clean[:2], faults[0], *clean[2:], *faults[1:]]
    return trace, clean, expected


def test_one_fault_per_rule_removes_exactly_those_and_reports_each(tmp_path: Path) -> None:
    trace, clean, expected = faulty_capture()
    src, dst = tmp_path / "raw.parquet", tmp_path / "clean.parquet"
    write_trace(src, trace)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    report = scrub_trace(src, dst, ScrubOptions(max_context=MAX_CONTEXT))
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # input untouched
    out = read_trace(dst)
    by_id = {e.request_id: e for e in out}

    counts = {r.name: r.count for r in report.rules}
    assert counts.pop("duplicate") == 1
    for rule in (
        "transport_error",
        "http_error",
        "partial",
        "unparseable",
        "non_model",
        "side_call",
        "retry",
        "orphan_tools",
        "over_max_context",
        "orphan_tools_repaired",
        "provider_fields",
        "secrets",
        "reparented",
    ):
        assert counts.pop(rule) == 1, rule
    assert not any(counts.values())
    assert {r.name for r in report.rules} == {r.name for r in RULES}
    dropped = {
        rid
        for rid, rule in expected.items()
        if rule
        in {
            "transport_error",
            "http_error",
            "partial",
            "unparseable",
            "non_model",
            "side_call",
            "retry",
            "orphan_tools",
            "over_max_context",
        }
    }
    assert report.exchanges_in == len(trace)
    assert report.exchanges_out == len(trace) - len(dropped) - 1
    assert not dropped & set(by_id)

    # the clean rows come out exactly as they went in
    read_back = {e.request_id: e for e in read_trace(src)}
    for ex in clean:
        assert by_id[ex.request_id] == read_back[ex.request_id]
        assert orjson.dumps(by_id[ex.request_id].request) == orjson.dumps(
            read_back[ex.request_id].request
        )

    assert by_id["x-first"] == read_back["x-first"]
    assert by_id["x-child"].parent_request_id is None  # x-http had no parent
    repaired = by_id["x-repair"]
    assert FLAG_REPAIRED in repaired.flags
    assert [m["role"] for m in repaired.request["messages"]] == ["user", "user"]
    assert FLAG_PROVIDER_FIELDS in by_id["x-provider"].flags
    assert by_id["x-provider"].request == read_back["x-provider"].request  # kept, only flagged
    secret_row = by_id["x-secret"]
    assert FLAG_REDACTED in secret_row.flags
    assert SECRET not in orjson.dumps(secret_row.request).decode()
    assert SECRET.encode() not in dst.read_bytes()
    assert "ghp_REDACTED1_x" in secret_row.request["messages"][0]["content"]
    assert report.hit_rate_before is not None and report.hit_rate_after is not None


def test_keep_side_calls_and_non_model_flags_them() -> None:
    trace, _, _ = faulty_capture()
    out, report = scrub_exchanges(
        trace, ScrubOptions(keep_side_calls=True, keep_non_model=True, hit_rate=False)
    )
    by_id = {e.request_id: e for e in out}
    assert FLAG_SIDE_CALL in by_id["x-title"].flags
    assert "non_model" in by_id["x-count"].flags
    rules = {r.name: r for r in report.rules}
    assert rules["side_call"].action == "flagged" and rules["side_call"].count == 1
    assert report.hit_rate_before is None


def test_probe_with_max_tokens_1_is_a_side_call() -> None:
    probe = _captured(
        _ex("p", "t", {"max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}, 0)
    )
    out, report = scrub_exchanges([probe], ScrubOptions(hit_rate=False))
    assert out == [] and report.count("side_call") == 1


def test_scrub_reads_the_side_call_flag_and_has_no_rule_of_its_own() -> None:
    """A title request capture did not flag (another tool's trace) is kept: one rule, capture's."""
    title = _ex(
        "t",
        "t",
        {
            "system": "Generate a concise title for this conversation.",
            "messages": [{"role": "user", "content": "hi"}],
        },
        0,
        api=Api.ANTHROPIC_MESSAGES,
    )
    assert FLAG_SIDE_CALL in _captured(title).flags
    out, report = scrub_exchanges([title], ScrubOptions(hit_rate=False))
    assert [e.request_id for e in out] == ["t"] and report.count("side_call") == 0


def test_secrets_keep_prefix_sharing_and_hit_rate() -> None:
    rng = random.Random(5)
    exs = openai_session(rng, "s", 5)
    # the key appears in the first user message, so every request of the session carries it
    first = exs[0].request["messages"][1]
    leaked = {"role": "user", "content": first["content"] + f" my key is sk-proj-{'Zz9' * 12}"}
    exs = [
        replace(
            e,
            request={
                **e.request,
                "messages": [e.request["messages"][0], leaked, *e.request["messages"][2:]],
            },
        )
        for e in exs
    ]
    out, report = scrub_exchanges(exs)
    assert report.secrets_distinct == {"openai_api_key": 1}
    assert report.count("secrets") == 5
    # the placeholder has the secret's token count: nothing moves
    assert report.hit_rate_before == report.hit_rate_after
    texts = {e.request["messages"][1]["content"] for e in out}
    assert len(texts) == 1 and "sk-proj-REDACTED1_x" in texts.pop()


def test_scrub_never_mutates_its_input() -> None:
    trace, _, _ = faulty_capture()
    snapshot = copy.deepcopy(trace)
    scrub_exchanges(trace, ScrubOptions(max_context=MAX_CONTEXT))
    assert trace == snapshot


def test_scrub_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    src = tmp_path / "t.parquet"
    write_trace(src, faulty_capture()[1])
    with pytest.raises(UsageError):
        scrub_trace(src, src)


def test_scrub_is_idempotent_on_the_fault_capture(tmp_path: Path) -> None:
    trace, _, _ = faulty_capture()
    once, _ = scrub_exchanges(trace, ScrubOptions(max_context=MAX_CONTEXT))
    twice, report = scrub_exchanges(once, ScrubOptions(max_context=MAX_CONTEXT))
    assert twice == once
    assert report.exchanges_in == report.exchanges_out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchange_sequences(max_requests=10))
def test_scrub_is_idempotent(exchanges: list[Exchange]) -> None:
    options = ScrubOptions(hit_rate=False, max_context=200, redact_emails=True)
    once, _ = scrub_exchanges(exchanges, options)
    twice, _ = scrub_exchanges(once, options)
    assert twice == once


def test_hash_only_rows_pass_untouched() -> None:
    rows = [
        Exchange(
            request_id=f"w{i}",
            session_id="w",
            thread_id="w/main",
            api=Api.OPENAI_CHAT,
            request={},
            timing=Timing(start_wall_ns=i),
            usage=Usage(prompt_tokens=130, completion_tokens=5),
            hash_ids=(1, 2),
            hash_block_size=64,
        )
        for i in range(3)
    ]
    out, report = scrub_exchanges(rows)
    assert out == rows  # a streaming + non-streaming pair with equal hash ids is not a retry
    assert report.hit_rate_before == report.hit_rate_after
