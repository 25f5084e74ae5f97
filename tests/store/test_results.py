from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx import __version__
from agentx.core.errors import TraceError
from agentx.core.record import RequestRecord
from agentx.store import results
from agentx.store.results import FIELDS, SCHEMA, read_requests, write_requests

i64 = st.integers(min_value=-(2**62), max_value=2**62)
maybe_int = st.none() | st.integers(min_value=0, max_value=2**40)
maybe_str = st.none() | st.text(max_size=30)

records = st.builds(
    RequestRecord,
    request_id=st.text(max_size=12),
    source_request_id=st.text(max_size=12),
    lane=st.integers(min_value=0, max_value=10_000),
    session_id=st.text(max_size=12),
    thread_id=st.text(max_size=12),
    turn=st.integers(min_value=0, max_value=10_000),
    warmup=st.booleans(),
    start_wall_ns=i64,
    scheduled_ns=i64,
    sent_ns=i64,
    status=st.none() | st.integers(min_value=100, max_value=599),
    ok=st.booleans(),
    error_type=maybe_str,
    error=maybe_str,
    ttfb_ns=maybe_int,
    ttft_ns=maybe_int,
    ttfc_ns=maybe_int,
    e2e_ns=maybe_int,
    itl_ns=st.lists(st.integers(min_value=0, max_value=2**40), max_size=20).map(tuple),
    prompt_tokens=maybe_int,
    completion_tokens=maybe_int,
    cached_tokens=maybe_int,
    expected_prompt_tokens=maybe_int,
    expected_completion_tokens=maybe_int,
    theoretical_hit_tokens=maybe_int,
    in_window=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(records, max_size=8))
def test_requests_round_trip(rows: list[RequestRecord]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "requests.parquet"
        write_requests(path, rows)
        assert read_requests(path) == rows
        assert not list(Path(d).glob("*.tmp"))


def test_itl_is_a_list_of_int64_and_nulls_stay_null(tmp_path: Path) -> None:
    row = RequestRecord(
        "r",
        "s",
        0,
        "sess",
        "t",
        0,
        False,
        1,
        2,
        3,
        None,
        False,
        error_type="connect",
        itl_ns=(5, 6),
    )
    write_requests(tmp_path / "r.parquet", [row])
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.schema.field("itl_ns").type == pa.list_(pa.int64())
    assert table.column("cached_tokens").to_pylist() == [None]


def test_format_and_version_are_in_the_metadata(tmp_path: Path) -> None:
    row = RequestRecord("r", "s", 0, "sess", "t", 0, False, 1, 2, 3, 200, True)
    write_requests(tmp_path / "r.parquet", [row])
    meta = pq.read_schema(tmp_path / "r.parquet").metadata
    assert meta[b"agentx.format"] == b"agentx.requests/1"
    assert meta[b"agentx.version"] == __version__.encode()


def test_reads_files_written_before_a_field_was_added(tmp_path: Path) -> None:
    row = RequestRecord("r", "s", 0, "sess", "t", 0, False, 1, 2, 3, 200, True, in_window=False)
    write_requests(tmp_path / "r.parquet", [row])
    table = pq.read_table(tmp_path / "r.parquet").drop_columns(
        ["in_window", "theoretical_hit_tokens"]
    )
    pq.write_table(table, tmp_path / "old.parquet")
    (old,) = read_requests(tmp_path / "old.parquet")
    assert old == dataclasses.replace(row, in_window=True)


def test_not_a_requests_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "x.parquet")
    with pytest.raises(TraceError, match="missing columns"):
        read_requests(tmp_path / "x.parquet")
    with pytest.raises(TraceError, match="no such file"):
        read_requests(tmp_path / "none.parquet")


@settings(max_examples=30, deadline=None)
@given(st.lists(records, max_size=8))
def test_the_file_holds_the_plain_conversion_of_the_rows(rows: list[RequestRecord]) -> None:
    """The gaps written from their arrays give the table a row-by-row conversion gives."""
    plain = pa.table(
        {
            f.name: [
                list(v) if f.name == "itl_ns" else v for v in (getattr(r, f.name) for r in rows)
            ]
            for f in FIELDS
        },
        schema=SCHEMA,
    )
    with tempfile.TemporaryDirectory() as d:
        write_requests(Path(d) / "r.parquet", rows)
        assert pq.read_table(Path(d) / "r.parquet").equals(plain)


def test_rows_are_written_in_row_groups_and_read_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "ROW_GROUP_ROWS", 3)
    rows = [
        RequestRecord(f"r{i}", "s", 0, "sess", "t", i, False, 1, 2, i, 200, True, itl_ns=(i,) * i)
        for i in range(8)
    ]
    write_requests(tmp_path / "r.parquet", rows)
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.num_row_groups == 3
    back = read_requests(tmp_path / "r.parquet")
    assert back == rows and back[5].itl_ns == (5,) * 5
