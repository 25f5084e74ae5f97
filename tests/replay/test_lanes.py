"""The lanes hold no rows: each finished request's row goes to the process's spool on disk, so a
run's memory does not grow with the requests it has finished (real sockets on 127.0.0.1)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from agentx.core.record import RequestRecord
from agentx.replay import lanes, run, run_replay
from agentx.replay.theory import SentLog
from agentx.store import rowspool
from agentx.store.rowspool import read_spools

from .factory import T0, chat_session, write
from .fault_server import FaultServer
from .test_run import options

BATCH = 4
LANES = 2


def live_records() -> int:
    gc.collect()
    return sum(isinstance(o, RequestRecord) for o in gc.get_objects())


def test_finished_rows_are_on_disk_not_in_memory_while_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rowspool, "BATCH_ROWS", BATCH)
    trace = write(
        tmp_path / "t.parquet",
        chat_session("a", turns=40) + chat_session("b", turns=40, start_ns=T0 + 1),
    )
    seen: dict[str, int] = {}
    count = lanes.LaneDriver._count

    def spy(driver: lanes.LaneDriver, record: RequestRecord) -> None:  # before the row is spooled
        count(driver, record)
        if driver.counters.ok + driver.counters.errors == 60:  # 20 requests still to go
            seen["in_memory"] = live_records() - seen["before"]
            seen["on_disk"] = len(read_spools([driver.rows.path]))

    monkeypatch.setattr(lanes.LaneDriver, "_count", spy)
    seen["before"] = live_records()
    with FaultServer() as server:
        result = run_replay(options(trace, server.url, tmp_path, concurrency=LANES))
    assert len(result.records) == 80 and all(r.ok for r in result.records)
    assert seen["on_disk"] == 56  # the 59 rows before this one, in whole batches of 4
    # this row, the 3 not yet written, and a lane's row on its way out: never the 59
    assert seen["in_memory"] <= 1 + (BATCH - 1) + LANES


def test_the_lanes_hold_the_plans_of_the_sessions_running_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's plan is dropped once its instance ends (a plan of every session reached
    would grow with the run), and planned again if the tree is started again."""
    sessions = 8
    trace = write(
        tmp_path / "t.parquet",
        [
            ex
            for i in range(sessions)
            for ex in chat_session(f"s{i}", turns=3, start_ns=T0 + i * 10**9)
        ],
    )
    held: list[int] = []
    count = lanes.LaneDriver._count

    def spy(driver: lanes.LaneDriver, record: RequestRecord) -> None:
        count(driver, record)
        held.append(len(driver._plans))

    monkeypatch.setattr(lanes.LaneDriver, "_count", spy)
    with FaultServer() as server:
        result = run_replay(options(trace, server.url, tmp_path, concurrency=LANES))
    assert len(result.records) == 3 * sessions and all(r.ok for r in result.records)
    assert max(held) <= 2 * LANES < sessions  # the running ones (and the next a lane waits for)


def test_rows_that_cannot_be_spooled_fail_the_run_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(tmp: Path, worker: int) -> Path:
        return Path("/dev/full")

    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    monkeypatch.setattr(rowspool, "BATCH_ROWS", 1)
    monkeypatch.setattr(run, "rows_path", full)
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=5))
    with FaultServer() as server:
        result = run_replay(options(trace, server.url, tmp_path))
    assert result.failure is not None and "cannot spool the rows" in result.failure
    assert result.records == []  # nothing reached the spool: no row is made up
    summary: dict[str, Any] = result.summary.to_json()
    assert summary["gates"]["passed"] is False


def test_the_sent_log_holds_the_bodies_of_the_live_threads_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each thread's last request is marked in the sent log, which then forgets the thread: with
    two lanes it never holds more than two threads' bodies, however many sessions ran."""
    trace = write(
        tmp_path / "t.parquet",
        [
            ex
            for i, name in enumerate("abcdef")
            for ex in chat_session(name, turns=4, start_ns=T0 + i)
        ],
    )
    held: list[int] = []
    marked: list[str] = []
    add = SentLog.add

    def spy(log: SentLog, *args: Any, **kwargs: Any) -> None:
        add(log, *args, **kwargs)
        held.append(len(log._last._bodies))
        if args[6] if len(args) > 6 else kwargs.get("last", False):
            marked.append(args[3])

    monkeypatch.setattr(SentLog, "add", spy)
    with FaultServer() as server:
        result = run_replay(options(trace, server.url, tmp_path, concurrency=LANES))
    assert len(result.records) == 24 and all(r.ok for r in result.records)
    assert len(marked) == len(set(marked)) == 6  # one last request per thread
    assert max(held) <= LANES and held[-1] == 0
