"""Reading a few rows of a trace by row number (``TraceIndex.read_rows``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.core.examples import example_path
from agentx.core.models import ExchangeMeta
from agentx.store.select import (
    _flag_sets,
    _Numbers,
    _row_numbers,
    _Shared,
    _Strings,
    column_values,
    read_index,
)

EXAMPLE = example_path("example")


def test_read_rows_returns_the_rows_asked_for_in_that_order() -> None:
    index = read_index(EXAMPLE)
    rows = [len(index.rows) - 1, 0, 1]
    got = index.read_rows(rows)
    assert [ex.request_id for ex in got] == [index.rows[r].request_id for r in rows]


def test_reading_rows_does_not_import_pandas() -> None:
    """pa.array asks pandas whether its argument is a pandas object: a reader of a few rows
    would pay its import (~0.5 s, ~60 MB) for nothing."""
    code = (
        "import sys\n"
        "from agentx.store.select import read_index\n"
        f"read_index({str(EXAMPLE)!r}).read_rows([0, 1])\n"
        "print('pandas' in sys.modules)\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_index_holds_each_repeated_value_once() -> None:
    """A session's rows share their session id (a trace its model and api, most rows one set of
    flags): one object each in the index, not one a row, with the same values as the file's."""
    index = read_index(EXAMPLE)
    rows = list(index.rows)
    by_id = {m.request_id: m for m in rows}
    for field in ("session_id", "thread_id", "api", "model", "flags"):
        values = [getattr(m, field) for m in rows]
        assert len({id(v) for v in values}) == len(set(values)), field
    assert [m for m in rows if m.parent_request_id in by_id]
    again = index.read_rows(range(len(rows)))
    assert [(ex.session_id, ex.thread_id, ex.parent_request_id) for ex in again] == [
        (m.session_id, m.thread_id, m.parent_request_id) for m in rows
    ]


_TYPES = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=8)),
    "large_string": (pa.large_string(), st.text(max_size=8)),
    "list<string>": (pa.list_(pa.string()), st.lists(st.none() | st.text(max_size=4), max_size=3)),
}


@st.composite
def _columns(draw: st.DrawFn) -> pa.ChunkedArray:
    kind, values = _TYPES[draw(st.sampled_from(sorted(_TYPES)))]
    chunks = draw(st.lists(st.lists(st.none() | values, max_size=6), min_size=1, max_size=3))
    arrays = [pa.array(c, type=kind) for c in chunks]
    cut = draw(st.integers(0, 2))  # a slice: offsets into buffers that start elsewhere
    arrays = [a.slice(min(cut, len(a))) for a in arrays]
    return pa.chunked_array(arrays, type=kind)


@settings(max_examples=300, deadline=None)
@given(_columns())
def test_column_values_are_to_pylist(col: pa.ChunkedArray) -> None:
    got = column_values(col)
    assert got == col.to_pylist()
    assert [type(v) for v in got] == [type(v) for v in col.to_pylist()]


_ID = st.sampled_from(["a", "b", "c", "dé", ""])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.none() | _ID, max_size=6), min_size=1, max_size=3))
def test_shared_values_are_to_pylist_each_value_once(chunks: list[list[str | None]]) -> None:
    col = pa.chunked_array([pa.array(c, pa.string()).slice(1) for c in chunks], pa.string())
    shared = _Shared.of(col)
    got = [shared.get(i) for i in range(len(col))]
    assert got == col.to_pylist()
    firsts = {v: v for v in reversed(got)}
    assert all(v is None or v is firsts[v] for v in got)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.none() | st.lists(_ID, max_size=3), max_size=6), min_size=1, max_size=3)
)
def test_flag_sets_are_the_rows_flags(chunks: list[list[list[str] | None]]) -> None:
    kind = pa.list_(pa.string())
    col = pa.chunked_array([pa.array(c, kind).slice(1) for c in chunks], kind)
    got = _flag_sets(col)
    assert got == [tuple(v or ()) for v in col.to_pylist()]
    firsts = {v: v for v in reversed(got)}
    assert all(v is firsts[v] for v in got)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID, unique=True), st.lists(st.none() | _ID | st.just("zz"), max_size=8))
def test_row_numbers_name_the_rows_of_the_ids(ids: list[str], named: list[str | None]) -> None:
    rows = _row_numbers(
        pa.chunked_array([pa.array(named, pa.string())]),
        pa.chunked_array([pa.array(ids, pa.string())]),
    )
    row_of = {rid: i for i, rid in enumerate(ids)}
    assert rows.tolist() == [-1 if v is None else row_of.get(v, -2) for v in named]


@settings(max_examples=300, deadline=None)
@given(_columns())
def test_index_columns_give_each_row_as_to_pylist(col: pa.ChunkedArray) -> None:
    """A numeric or string column held as numpy arrays (or bytes and offsets) gives each row's
    value, of the same type, as ``to_pylist`` does."""
    if pa.types.is_list(col.type):
        kept = _Shared.flags(col)
        assert [kept.get(i) for i in range(len(col))] == [tuple(v or ()) for v in col.to_pylist()]
        return
    text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    held = _Strings.of(col) if text else _Numbers.of(col)
    got = [held.get(i) for i in range(len(col))]
    assert got == col.to_pylist()
    assert [type(v) for v in got] == [type(v) for v in col.to_pylist()]


def test_index_rows_are_the_files_rows() -> None:
    """Each row the index gives is the metadata of the file's row, as decoded by ``to_pylist``
    (a parent's id by name, hash-only and prompt as the conversation and block size say)."""
    import pyarrow.parquet as pq

    index = read_index(EXAMPLE, first_locator=7)
    table = pq.read_table(index.path).to_pylist()
    want = [
        ExchangeMeta(
            request_id=r["request_id"],
            session_id=r["session_id"],
            thread_id=r["thread_id"],
            api=r["api"],
            start_wall_ns=r["start_wall_ns"],
            e2e_ns=r["e2e_ns"],
            ttft_ns=r["ttft_ns"],
            parent_request_id=r["parent_request_id"],
            status=r["status"],
            model=r["model"],
            prompt_tokens=r["prompt_tokens"],
            completion_tokens=r["completion_tokens"],
            think_time_s=r["think_time_s"],
            api_time_s=r["api_time_s"],
            flags=tuple(r["flags"] or ()),
            hash_only=r["conversation_key"] is None and r["hash_block_size"] is not None,
            has_prompt=r["conversation_key"] is not None or r["hash_block_size"] is not None,
            locator=7 + i,
        )
        for i, r in enumerate(table)
    ]
    assert list(index.rows) == want
    assert index.rows[-1] == want[-1] and index.rows[1:3] == want[1:3]
    assert [index.rows.request_id(i) for i in range(len(want))] == [m.request_id for m in want]
