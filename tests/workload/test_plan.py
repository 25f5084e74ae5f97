from __future__ import annotations

import dataclasses
import functools
import operator
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from replay.factory import T0, anthropic_session, chat_session, gemini_session, responses_session

from agentx.apis import Api
from agentx.core.errors import TraceError, UsageError
from agentx.core.examples import example_path
from agentx.core.models import Usage
from agentx.prefixcache.tokens import count_tokens
from agentx.replay.options import ReplayOptions, parse_shard
from agentx.workload.build import BuildConfig, ThreadBuilder
from agentx.workload.options import parse_extra_body
from agentx.workload.plan import build_plan
from agentx.workload.source import open_source


def test_sessions_threads_and_think_times() -> None:
    main = chat_session("s", turns=3, think_s=2.5)
    plan = build_plan(main)
    (session,) = plan.sessions
    (thread,) = session.threads
    assert [t.think_s for t in thread.turns] == [0.0, 2.5, 2.5]
    assert thread.after is None and thread.delay_s == 0.0


@pytest.mark.parametrize("session", [gemini_session, responses_session])
def test_rows_in_memory_of_every_family_have_a_conversation(session: Any) -> None:
    """A Gemini row keeps its conversation in ``contents``, a Responses row in ``input``: rows
    given in memory are planned as the trace store plans them, none skipped."""
    plan = build_plan(session("s", turns=3), api_mode="native")
    assert [len(t.turns) for s in plan.sessions for t in s.threads] == [3]
    assert not plan.sessions.tally.skipped


def test_think_time_derived_from_timing_when_not_recorded() -> None:
    rows = [
        dataclasses.replace(ex, think_time_s=None) for ex in chat_session("s", turns=2, think_s=1.0)
    ]
    assert build_plan(rows).sessions[0].threads[0].turns[1].think_s == pytest.approx(1.0)


def test_subagent_starts_after_its_parent_request_at_the_recorded_gap() -> None:
    main = chat_session("s", turns=3, think_s=1.0)  # requests at 0, 1.05 s, 2.1 s
    parent = main[1]
    start = parent.timing.start_wall_ns + (parent.timing.e2e_ns or 0) + 200_000_000
    sub = chat_session(
        "s", turns=2, thread_id="sub", start_ns=start, parent_request_id=parent.request_id
    )
    plan = build_plan([*main, *sub])
    threads = plan.sessions[0].threads
    assert [t.thread_id for t in threads] == ["main", "sub"]
    assert threads[1].after == (0, 1)
    assert threads[1].delay_s == pytest.approx(0.2)


def test_subagent_without_parent_id_follows_the_latest_finished_request() -> None:
    main = chat_session("s", turns=3, think_s=1.0)
    start = main[2].timing.start_wall_ns - 100_000_000  # after turn 1 ended, before turn 2
    sub = chat_session("s", turns=1, thread_id="sub", start_ns=start)
    threads = build_plan([*main, *sub]).sessions[0].threads
    assert threads[1].after == (0, 1)


def test_skips_non_model_partial_and_failed_rows() -> None:
    rows = chat_session("s", turns=4)
    rows[0] = dataclasses.replace(rows[0], flags=("non_model",))
    rows[1] = dataclasses.replace(rows[1], flags=("partial",))
    rows[2] = dataclasses.replace(rows[2], status=529)
    rows.append(dataclasses.replace(rows[3], request_id="x", api=Api.OTHER))
    plan = build_plan(rows)
    assert plan.requests == 1
    assert plan.skipped == {
        "flagged non_model": 1,
        "flagged partial": 1,
        "failed when captured": 1,
        "not a model call": 1,
    }


def test_nothing_to_replay() -> None:
    with pytest.raises(TraceError, match="nothing to replay"):
        build_plan(
            [dataclasses.replace(ex, flags=("non_model",)) for ex in chat_session("s", turns=1)]
        )


def test_hash_only_rows_get_synthetic_text() -> None:
    base = chat_session("s", turns=2)
    rows = [
        dataclasses.replace(
            ex,
            request={},
            hash_ids=tuple(range(k + 2)),
            hash_block_size=16,
            usage=Usage(prompt_tokens=16 * (k + 2), completion_tokens=3),
        )
        for k, ex in enumerate(base)
    ]
    plan = build_plan(rows)
    assert plan.synthesized == 2 and plan.requests == 2
    (session,) = plan.sessions
    loader = plan.source.load_session(session.source)
    builder = ThreadBuilder(
        BuildConfig(api_mode="chat", model="m", extra_body={}, ignore_eos=False, live=False),
        Api.OPENAI_CHAT,
    )
    first, second = (
        orjson.loads(builder.build(loader.exchange(t.meta), None).body)["messages"][0]["content"]
        for t in session.threads[0].turns
    )
    assert second.startswith(first)  # shared hash ids, shared text
    assert count_tokens(second) == 48  # 3 blocks of 16, token-exact


def test_sampling_is_seeded_and_shards_partition_the_sessions() -> None:
    rows = [ex for i in range(10) for ex in chat_session(f"s{i}", turns=1, start_ns=T0 + i)]
    a = [s.session_id for s in build_plan(rows, sessions=4, seed=7).sessions]
    assert a == [s.session_id for s in build_plan(rows, sessions=4, seed=7).sessions]
    assert len(a) == 4 and a != [
        s.session_id for s in build_plan(rows, sessions=4, seed=8).sessions
    ]
    shards = [[s.session_id for s in build_plan(rows, shard=(i, 3)).sessions] for i in range(3)]
    assert sorted(functools.reduce(operator.iadd, shards, [])) == sorted(f"s{i}" for i in range(10))
    assert shards[0] == ["s0", "s3", "s6", "s9"]
    with pytest.raises(UsageError):
        build_plan(rows[:1], shard=(1, 2))


def test_max_entries_keeps_the_first_sessions_before_sampling(tmp_path: Path) -> None:
    rows = [ex for i in range(10) for ex in chat_session(f"s{i}", turns=1, start_ns=T0 + i)]
    assert [s.session_id for s in build_plan(rows, max_entries=3).sessions] == ["s0", "s1", "s2"]
    sampled = [s.session_id for s in build_plan(rows, max_entries=5, sessions=2, seed=1).sessions]
    assert len(sampled) == 2 and set(sampled) <= {"s0", "s1", "s2", "s3", "s4"}
    weka = tmp_path / "weka"
    weka.mkdir()
    for f in sorted(example_path("weka").glob("*.json")):
        shutil.copy(f, weka / f.name)
    lazy = build_plan(open_source(weka), max_entries=1)  # a directory: the first file
    assert len(lazy.sessions) == 1
    assert [s.session_id for s in lazy.sessions] == ["trace_0001"]


def test_api_messages_needs_anthropic_rows() -> None:
    build_plan(anthropic_session("a"), api_mode="messages")
    with pytest.raises(UsageError, match="--api messages"):
        build_plan([*anthropic_session("a"), *chat_session("c")], api_mode="messages")


def test_options_validation_and_parsers() -> None:
    ok = ReplayOptions.of(trace=Path("t"), endpoint="http://x", api_key="sk-secret")
    assert "sk-secret" not in repr(ok) and "api_key" not in ok.config()
    for bad in (
        {"concurrency": 0},
        {"endpoint": "localhost:8000"},
        {"assistant": "live", "api": "native"},
        {"workers": 3, "concurrency": 2},
        {"shard": (2, 2)},
        {"time_scale": -1.0},
    ):
        with pytest.raises(UsageError):
            ReplayOptions.of(**{"trace": Path("t"), "endpoint": "http://x", **bad})
    assert parse_shard("1/4") == (1, 4)
    for text in ("4/4", "a/b", "1"):
        with pytest.raises(UsageError):
            parse_shard(text)
    assert parse_extra_body('{"top_k": 1}') == {"top_k": 1}
    for text in ("[1]", "{bad"):
        with pytest.raises(UsageError):
            parse_extra_body(text)


def test_a_parquet_traces_sessions_are_planned_again_when_asked_for() -> None:
    """A plan of an agentx trace keeps each session as its handle (:class:`Unplanned`), not its
    rows' metadata, and plans it again, equal, whenever it is asked for."""
    from agentx.core.examples import example_path
    from agentx.workload.plan import Unplanned
    from agentx.workload.source import open_source

    plan = build_plan(open_source(example_path("example")))
    assert all(isinstance(p, Unplanned) for p in plan.sessions._planned)
    first, again = plan.sessions[0], plan.sessions[0]
    assert first == again and first is not again
    assert list(plan.sessions) == [plan.sessions[i] for i in range(len(plan.sessions))]
