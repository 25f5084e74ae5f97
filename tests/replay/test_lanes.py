"""The lanes hold no rows: each finished request's row goes to the process's spool on disk, so a
run's memory does not grow with the requests it has finished (real sockets on 127.0.0.1)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from agentx.core.record import RequestRecord
from agentx.replay import lanes, run, run_replay
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
