"""A trace's fingerprint names its rows: other files, compression or row groups keep it; a row
changed, dropped or moved changes it."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agentx.core.errors import TraceError
from agentx.core.examples import example_path
from agentx.formats.fingerprint import short, trace_fingerprint
from agentx.store.fingerprint import rows_sha256


def test_the_same_rows_in_other_files_keep_the_fingerprint(tmp_path: Path) -> None:
    src = example_path()
    table = pq.read_table(src)
    first = rows_sha256(src)
    assert len(first) == 64 and trace_fingerprint(src) == first

    pq.write_table(table, tmp_path / "zstd.parquet", compression="zstd", row_group_size=7)
    assert rows_sha256(tmp_path / "zstd.parquet") == first
    split = tmp_path / "split"  # a dataset directory: its files in name order
    split.mkdir()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), split / "part-0.parquet")
    pq.write_table(table.slice(half), split / "part-1.parquet")
    assert rows_sha256(split) == first

    pq.write_table(table.slice(1), tmp_path / "dropped.parquet")
    assert rows_sha256(tmp_path / "dropped.parquet") != first
    moved = table.take([1, 0, *range(2, table.num_rows)])
    pq.write_table(moved, tmp_path / "moved.parquet")
    assert rows_sha256(tmp_path / "moved.parquet") != first


def test_other_formats_by_their_bytes_and_unreadable_ones_refused(tmp_path: Path) -> None:
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text('{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}\n')
    one = trace_fingerprint(jsonl)
    jsonl.write_text('{"timestamp": 0, "input_length": 11, "output_length": 2, "hash_ids": [1]}\n')
    assert trace_fingerprint(jsonl) != one
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not parquet")
    with pytest.raises(TraceError, match=r"bad\.parquet"):
        rows_sha256(bad)
    assert short(None) == "unknown" and short("ab" * 32) == "ab" * 6
