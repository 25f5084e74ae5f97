"""Unreadable traces raise one clear TraceError line, never a pyarrow traceback."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentx.core.errors import TraceError
from agentx.core.models import Exchange, Timing
from agentx.store import iter_exchanges, open_trace, read_trace, write_trace


def good_trace(path: Path, n: int = 50) -> Path:
    conv: list[object] = []
    exs = []
    for i in range(n):
        conv = [*conv, {"role": "user", "content": f"message {i} " * 30}]
        exs.append(
            Exchange(
                request_id=f"r{i}",
                session_id="s",
                thread_id="t",
                api="openai.chat",
                request={"model": "m", "messages": list(conv)},
                timing=Timing(start_wall_ns=i),
                parent_request_id=f"r{i - 1}" if i else None,
            )
        )
    write_trace(path, exs)
    return path


def truncated(tmp: Path) -> Path:
    path = good_trace(tmp / "cut.parquet")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def not_parquet(tmp: Path) -> Path:
    path = tmp / "notes.parquet"
    path.write_text("just some text\n")
    return path


def foreign_parquet(tmp: Path) -> Path:
    path = tmp / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    return path


def wrong_version(tmp: Path) -> Path:
    path = good_trace(tmp / "v99.parquet", 3)
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[b"agentx.format"] = b"agentx.trace/99"
    pq.write_table(table.replace_schema_metadata(meta), path)
    return path


def empty_file(tmp: Path) -> Path:
    path = tmp / "empty.parquet"
    path.write_bytes(b"")
    return path


def missing(tmp: Path) -> Path:
    return tmp / "missing.parquet"


def dangling_base(tmp: Path) -> Path:
    """Valid Parquet, agentx metadata, but a row extends a row that is not in the file."""
    path = good_trace(tmp / "dangling.parquet", 3)
    table = pq.read_table(path)
    table = table.slice(1)  # drop the base of the next row
    pq.write_table(table, path)
    return path


BAD = {
    "missing": (missing, "no such trace"),
    "truncated": (truncated, "not a readable Parquet trace"),
    "not parquet": (not_parquet, "not a readable Parquet trace"),
    "empty": (empty_file, "not a readable Parquet trace"),
    "foreign parquet": (foreign_parquet, "a Parquet file, but not an agentx trace"),
    "wrong version": (wrong_version, "'agentx.trace/99' is not supported"),
    "empty directory": (lambda tmp: tmp, r"a directory without agentx \*.parquet trace files"),
    "dangling delta base": (dangling_base, "corrupt trace"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_traces_raise_one_clear_line(tmp_path: Path, case: str) -> None:
    make, message = BAD[case]
    path = make(tmp_path)
    with pytest.raises(TraceError, match=message) as info:
        read_trace(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text


def test_errors_come_at_the_call_not_the_first_next(tmp_path: Path) -> None:
    with pytest.raises(TraceError):
        iter_exchanges(tmp_path / "missing.parquet")


def test_a_good_trace_still_opens(tmp_path: Path) -> None:
    assert open_trace(good_trace(tmp_path / "ok.parquet")).num_rows == 50
