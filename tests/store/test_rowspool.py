"""The spool of a replay's rows: rows go to disk a batch at a time, read back in send order."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.core.record import RequestRecord
from agentx.store.rowspool import RowSpool, read_spools, spooled_batches

from .test_results import records


def row(i: int, sent_ns: int, gaps: tuple[int, ...] = (1, 2, 3)) -> RequestRecord:
    return RequestRecord(
        f"r{i}", f"src{i}", 0, "sess", "main", i, False, 10, 20, sent_ns, 200, True, itl_ns=gaps
    )


@settings(max_examples=30, deadline=None)
@given(st.lists(records, max_size=12), st.integers(min_value=1, max_value=5))
def test_rows_read_back_as_written_in_send_order(rows: list[RequestRecord], batch: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        spool = RowSpool(Path(d) / "rows.arrows", batch_rows=batch)
        for r in rows:
            spool.add(r)
        spool.close()
        assert spool.error is None and spool.written == len(rows)
        assert read_spools([spool.path]) == sorted(rows, key=lambda r: r.sent_ns)


def test_rows_are_on_disk_once_a_batch_is_full_before_the_spool_closes(tmp_path: Path) -> None:
    spool = RowSpool(tmp_path / "rows.arrows", batch_rows=3)
    for i in range(7):
        spool.add(row(i, 100 - i))
    assert spool.written == 6  # two batches; the 7th row waits for the next one
    assert [r.request_id for r in read_spools([spool.path])] == [f"r{i}" for i in range(5, -1, -1)]
    spool.close()
    assert len(read_spools([spool.path])) == 7


def test_several_spools_interleave_by_send_time_ties_in_spool_order(tmp_path: Path) -> None:
    a = RowSpool(tmp_path / "rows-0.arrows")
    b = RowSpool(tmp_path / "rows-1.arrows")
    for spool, ids, times in ((a, "abc", (5, 1, 3)), (b, "xyz", (3, 2, 9))):
        for rid, t in zip(ids, times, strict=True):
            spool.add(dataclasses.replace(row(0, t), request_id=rid))
        spool.close()
    got = read_spools([a.path, b.path, tmp_path / "absent.arrows"])
    assert [r.request_id for r in got] == ["b", "y", "c", "x", "a", "z"]


def test_a_spool_cut_short_reads_up_to_its_last_whole_batch(tmp_path: Path) -> None:
    spool = RowSpool(tmp_path / "rows.arrows", batch_rows=2)
    sizes = []
    for i in range(4):
        spool.add(row(i, i))
        sizes.append(spool.path.stat().st_size)
    spool.close()
    data = spool.path.read_bytes()
    spool.path.write_bytes(data[: (sizes[1] + sizes[3]) // 2])  # the second batch torn
    assert [r.request_id for r in read_spools([spool.path])] == ["r0", "r1"]
    spool.path.write_bytes(b"")  # nothing, not even the schema
    assert list(spooled_batches(spool.path)) == []


def test_gaps_are_views_of_one_buffer_per_batch_not_python_ints(tmp_path: Path) -> None:
    spool = RowSpool(tmp_path / "rows.arrows", batch_rows=10)
    for i in range(3):
        spool.add(row(i, i, gaps=tuple(range(i, i + 100))))
    spool.close()
    got = read_spools([spool.path])
    assert [list(r.itl_ns) for r in got] == [list(range(i, i + 100)) for i in range(3)]
    bases = {id(r.itl_ns.ns.base) for r in got}
    assert len(bases) == 1  # one array of the batch's gaps, 8 bytes each


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_an_error_not_an_exception() -> None:
    spool = RowSpool(Path("/dev/full"), batch_rows=1)
    spool.add(row(0, 0))
    assert spool.error is not None and "cannot spool the rows" in spool.error
    assert "No space left on device" in spool.error
    spool.add(row(1, 1))  # dropped quietly from then on
    spool.close()
    assert spool.written == 0
