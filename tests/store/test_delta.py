"""Delta encoding at scale: storage stays linear when thousands of sessions interleave."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agentx.apis import Api
from agentx.core.models import Exchange, Timing
from agentx.store import TraceWriter, read_trace, recover, spool_path
from agentx.store.codec import DeltaEncoder


def _ex(session: int, turn: int) -> Exchange:
    messages = [{"role": "system", "content": "sys"}]
    for t in range(turn + 1):
        messages.append({"role": "user", "content": f"s{session} turn {t} " + "x" * 200})
        messages.append({"role": "assistant", "content": f"answer {t}"})
    return Exchange(
        request_id=f"r{session}-{turn}",
        session_id=f"s{session}",
        thread_id="main",
        parent_request_id=f"r{session}-{turn - 1}" if turn else None,
        api=Api.OPENAI_CHAT,
        request={"model": "m", "messages": messages},
        timing=Timing(start_wall_ns=turn * 10_000 + session),
    )


def test_thousands_of_interleaved_sessions_still_store_only_what_they_append() -> None:
    enc = DeltaEncoder(keep_recent=16)  # far fewer than the sessions in flight
    sessions, turns = 2000, 4
    rows = [enc.encode(_ex(s, t)) for t in range(turns) for s in range(sessions)]
    later = [r for r in rows if not r["request_id"].endswith("-0")]
    assert all(r["conversation_base_id"] == r["parent_request_id"] for r in later)
    # each later row stores exactly the two messages it appends
    assert all(r["conversation_delta"].count('"role"') == 2 for r in later)


def test_a_forgotten_thread_falls_back_to_a_full_row() -> None:
    enc = DeltaEncoder(keep_recent=1, keep_threads=1)
    first = [enc.encode(_ex(s, 0)) for s in range(3)]
    assert all(r["conversation_base_id"] is None for r in first)
    again = enc.encode(_ex(0, 1))  # session 0's thread was forgotten: stored whole, still exact
    assert again["conversation_base_id"] is None
    assert again["conversation_delta"].count('"role"') == 5


def test_the_spool_stores_a_repeated_tools_and_system_text_once(tmp_path: Path) -> None:

    tools = [{"name": f"tool{k}", "description": "d" * 2000} for k in range(20)]  # ~40 KB
    exchanges = []
    for s in range(3):
        for t in range(20):
            ex = _ex(s, t)
            body = {**ex.request, "tools": tools, "system": f"system prompt {s % 2} " * 40}
            exchanges.append(_with_body(ex, body))
    path = tmp_path / "t.parquet"
    w = TraceWriter(path)
    for ex in exchanges:
        w.append(ex)
    spool_size = spool_path(path).stat().st_size
    assert spool_size < 3 * 42_000 + 60 * 2_000  # tools once, not 60 times (60 x 40 KB = 2.4 MB)
    w._spool.close()  # the writer dies without compacting
    assert recover(path) == len(exchanges)
    assert [ex.request for ex in read_trace(path)] == [ex.request for ex in exchanges]


def _with_body(ex: Exchange, body: dict[str, object]) -> Exchange:
    return replace(ex, request=body)
