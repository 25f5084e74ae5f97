"""Delta encoding at scale: storage stays linear when thousands of sessions interleave."""

from __future__ import annotations

from agentx.models import API_OPENAI_CHAT, Exchange, Timing
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
        api=API_OPENAI_CHAT,
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
