from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.theory import TheoryRow
from agentx.prefixcache.tokens import request_tokens
from agentx.replay.theory import (
    SentLog,
    TheoryPass,
    load_rows,
    map_big_blocks,
    merged,
    read_log,
    theoretical,
    theory_rows,
    write_rows,
)


def bodies(n: int) -> list[bytes]:
    msgs: list[dict[str, str]] = [{"role": "system", "content": "shared system prompt " * 30}]
    out = []
    for k in range(n):
        msgs.append({"role": "user", "content": f"question {k} " * 20})
        out.append(orjson.dumps({"model": "m", "messages": msgs}))
        msgs.append({"role": "assistant", "content": f"answer {k}"})
    return out


def test_theoretical_equals_the_direct_computation_in_send_order(tmp_path: Path) -> None:
    a, b = SentLog(tmp_path / "a.log"), SentLog(tmp_path / "b.log")
    sent = []
    for i, body in enumerate(bodies(4)):  # two "workers" interleaving in time
        log, t = (a, 10 * i) if i % 2 == 0 else (b, 10 * i)
        log.add(f"r{i}", Api.OPENAI_CHAT, t, "thread", body)
        sent.append(body)
    a.close()
    b.close()
    assert [s.request_id for s in merged([tmp_path / "a.log", tmp_path / "b.log"])] == [
        "r0",
        "r1",
        "r2",
        "r3",
    ]
    got = theoretical(merged([tmp_path / "a.log", tmp_path / "b.log"]), 16)
    cache = UnboundedPrefixCache(16)
    for i, body in enumerate(sent):
        toks = request_tokens(Api.OPENAI_CHAT, orjson.loads(body))
        want = cache.observe(block_hashes(toks, 16), int(toks.size))
        assert (got[f"r{i}"].prompt_tokens, got[f"r{i}"].hit_tokens) == (
            want.prompt_tokens,
            want.hit_tokens,
        )
    assert got["r0"].hit_tokens == 0 and got["r3"].hit_tokens > 0


def test_a_log_cut_short_keeps_what_came_before(tmp_path: Path) -> None:
    log = SentLog(tmp_path / "a.log")
    for i, body in enumerate(bodies(3)):
        log.add(f"r{i}", Api.OPENAI_CHAT, i, "t", body)
    log.close()
    raw = (tmp_path / "a.log").read_bytes()
    (tmp_path / "a.log").write_bytes(raw[:-10])
    assert [s.request_id for s in read_log(tmp_path / "a.log")] == ["r0", "r1"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abc"),
            st.integers(0, 5),
            st.booleans(),  # the thread's last request (a thread seen again after it: anew)
            st.none() | st.integers(0, 2),  # the replica it was routed to
        ),
        min_size=1,
        max_size=30,
    ),
    st.integers(min_value=1, max_value=3000),
)
def test_the_spool_stores_deltas_and_reads_back_every_body(
    tmp_path_factory: pytest.TempPathFactory,
    sends: list[tuple[str, int, bool, int | None]],
    max_bytes: int,
) -> None:
    path = tmp_path_factory.mktemp("log") / "a.log"
    log = SentLog(path, max_bytes=max_bytes)  # small bounds evict: full bodies are written then
    grown: dict[str, bytes] = {}
    sent = []
    for i, (thread, cut, last, replica) in enumerate(sends):
        prev = grown.get(thread, b'{"messages":"')
        body = prev[: max(0, len(prev) - cut)] + f"turn {i} of {thread} ".encode() * 20
        grown[thread] = body
        log.add(f"r{i}", Api.OPENAI_CHAT, i, thread, body, replica, last)
        sent.append((body, replica, last))
    log.close()
    got = [(s.body, s.replica, s.last) for s in read_log(path)]
    assert got == sent


def test_a_thread_s_last_request_lets_the_log_forget_it(tmp_path: Path) -> None:
    log = SentLog(tmp_path / "a.log")
    sent = bodies(3)
    for i, body in enumerate(sent):
        log.add(f"r{i}", Api.OPENAI_CHAT, i, "t", body, last=i == 1)
    assert log._last.get("t") == sent[2]  # r2: a new start, held again
    log.add("r3", Api.OPENAI_CHAT, 3, "t", sent[2], last=True)
    assert log._last.get("t") is None and log._last._bytes == 0
    log.close()
    assert [(s.body, s.last) for s in read_log(tmp_path / "a.log")] == [
        (sent[0], False),
        (sent[1], True),
        (sent[2], False),
        (sent[2], True),
    ]


def test_a_growing_conversation_spools_what_it_adds(tmp_path: Path) -> None:
    log = SentLog(tmp_path / "a.log")
    sent = bodies(30)
    for i, body in enumerate(sent):
        log.add(f"r{i}", Api.OPENAI_CHAT, i, "t", body)
    log.close()
    assert log.spooled_bytes < sum(map(len, sent)) / 5
    assert [s.body for s in read_log(tmp_path / "a.log")] == sent


def _synthetic_logs(tmp_path: Path, n_logs: int = 2, lasts: bool = False) -> list[Path]:
    """Bodies of several threads, one growing user message each, across ``n_logs`` logs; with
    ``lasts`` every 9th request is marked its thread's last (the thread goes on anew)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    logs = [SentLog(tmp_path / f"s{i}.log") for i in range(n_logs)]
    texts = {t: f"salt {t} " for t in "abcde"}
    for i in range(40):
        thread = "abcde"[i * 7 % 5]
        texts[thread] += " ".join(f"w{(i * j) % 53}" for j in range(300 + 40 * i)) + "\n"
        body = orjson.dumps(
            {"model": "m", "messages": [{"role": "user", "content": texts[thread]}]}
        )
        last = lasts and i % 9 == 8
        logs[i % n_logs].add(f"r{i}", Api.OPENAI_CHAT, 1000 + i, thread, body, last=last)
    for log in logs:
        log.close()
    return [log.path for log in logs]


def _figures(rows: dict[str, TheoryRow]) -> list[tuple[str, int, int, list[int]]]:
    return [(k, r.prompt_tokens, r.hit_tokens, r.new_blocks.tolist()) for k, r in rows.items()]


def test_hashing_threads_side_by_side_gives_the_figures_of_one(tmp_path: Path) -> None:
    logs = _synthetic_logs(tmp_path)
    one = theoretical(merged(logs), 16, workers=1)
    assert len(one) == 40 and sum(r.hit_tokens for r in one.values()) > 0
    for workers in (2, 3):
        assert _figures(theoretical(merged(logs), 16, workers=workers)) == _figures(one)


def test_a_thread_forgotten_at_its_last_request_gives_the_same_figures(tmp_path: Path) -> None:
    """The pass drops a thread's state at its marked last request; the figures do not change
    (here the thread goes on after it: hashed anew from its whole body)."""
    want = _figures(theoretical(merged(_synthetic_logs(tmp_path / "plain")), 16, workers=1))
    marked = _synthetic_logs(tmp_path / "marked", lasts=True)
    assert sum(s.last for s in merged(marked)) == 4
    for workers in (1, 2):
        assert _figures(theoretical(merged(marked), 16, workers=workers)) == want


def test_a_followed_log_is_read_whole_while_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "live.log"
    sent = bodies(6)
    complete = threading.Event()

    def write() -> None:
        time.sleep(0.1)  # the reader waits for the file to appear
        with open(path, "wb") as f:
            for i, body in enumerate(sent):
                header = orjson.dumps([f"r{i}", Api.OPENAI_CHAT, i, "t", 0, len(body)]) + b"\n"
                f.write(header[:5])  # a record written in parts, the reader between them
                f.flush()
                time.sleep(0.02)
                f.write(header[5:] + body[:7])
                f.flush()
                time.sleep(0.02)
                f.write(body[7:])
                f.flush()
        complete.set()

    writer = threading.Thread(target=write)
    writer.start()
    got = [s.body for s in read_log(path, follow=complete.is_set)]
    writer.join()
    assert got == sent
    assert [s.body for s in read_log(tmp_path / "never.log", follow=lambda: True)] == []


def test_the_pass_beside_the_lanes_gives_the_rows_of_the_pass_after_them(tmp_path: Path) -> None:
    logs = [tmp_path / "s0.log", tmp_path / "s1.log"]
    early = TheoryPass(logs, tmp_path / "theory.pickle", 16, 64)  # before the logs exist
    try:
        _synthetic_logs(tmp_path)
        got = early.result()
    finally:
        early.close()
    assert got is not None
    assert _figures(got) == _figures(theoretical(merged(logs), 16))
    assert not (tmp_path / "theory.pickle").exists()


def test_a_pass_that_hashes_nothing_for_too_long_is_ended_and_the_caller_hashes(
    tmp_path: Path,
) -> None:
    _synthetic_logs(tmp_path)
    stuck = TheoryPass([tmp_path / "s0.log", tmp_path / "s1.log"], tmp_path / "t.pickle", 16, 64)
    pid = stuck._proc.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # a stopped child answers nothing, SIGTERM included
    try:
        t0 = time.monotonic()
        assert stuck.result(stall_s=1.0) is None
        assert time.monotonic() - t0 < 30  # the stall bound, then SIGTERM, then SIGKILL
        assert not stuck._proc.is_alive()
    finally:
        stuck.close()


def test_rows_written_in_batches_read_back_whole_in_order(tmp_path: Path) -> None:
    logs = _synthetic_logs(tmp_path)
    want = theoretical(merged(logs), 16, workers=1)
    write_rows(tmp_path / "rows", theory_rows(merged(logs), 16, workers=2), batch=7)
    got = load_rows(tmp_path / "rows")
    assert list(got) == list(want) and _figures(got) == _figures(want)
    write_rows(tmp_path / "none", iter(()))
    assert load_rows(tmp_path / "none") == {}


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="glibc's mallopt")
def test_the_child_can_have_malloc_map_big_blocks() -> None:
    assert map_big_blocks()
