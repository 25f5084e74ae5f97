"""Hash-only rows (format v1.1): block ids delta-encoded per thread, re-expanded exactly; the spool
spells consecutive ids as runs; readers project columns and sessions; v1 files still read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.core.models import Exchange, Timing, Usage
from agentx.prefixcache.hashing import common_prefix
from agentx.store import (
    METADATA_COLUMNS,
    TraceWriter,
    iter_exchanges,
    iter_records,
    open_trace,
    read_trace,
    write_trace,
)
from agentx.store.hashdelta import HashDeltaDecoder, HashDeltaEncoder, from_runs, to_runs
from agentx.store.spool import spool_path

IDS = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30).map(tuple)


def hash_row(i: int, ids: tuple[int, ...], session: str = "s", thread: str = "main") -> Exchange:
    return Exchange(
        request_id=f"{session}/{thread}/{i}",
        trace_id="T",
        session_id=session,
        thread_id=f"{session}/{thread}",
        api=Api.OPENAI_CHAT,
        request={},
        timing=Timing(start_wall_ns=i),
        parent_request_id=f"{session}/{thread}/{i - 1}" if i else None,
        usage=Usage(prompt_tokens=64 * len(ids), completion_tokens=7),
        hash_ids=ids,
        hash_block_size=64,
    )


def growing_thread(turns: int, session: str = "s", start: int = 0) -> list[Exchange]:
    """Each turn repeats its parent's ids, rehashes the last one now and then, appends 20."""
    out, ids = [], ()
    for i in range(turns):
        if i % 3 == 2:
            ids = ids[:-1]  # the parent's last (partial) block is recomputed
        ids = ids + tuple(range(start + 100 * i, start + 100 * i + 20))
        out.append(hash_row(i, ids, session))
    return out


@given(IDS, IDS)
def test_common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert common_prefix(a, b) == n


@given(st.lists(st.tuples(st.sampled_from(["t1", "t2"]), IDS, st.integers(0, 40)), max_size=12))
def test_encoder_and_decoder_round_trip(rows: list[tuple[str, tuple[int, ...], int]]) -> None:
    enc, deltas, last = HashDeltaEncoder(keep_recent=2, keep_threads=1), [], {}
    for i, (thread, fresh, keep) in enumerate(rows):
        ids = last.get(thread, ())[:keep] + fresh
        deltas.append((f"r{i}", enc.encode(f"r{i}", None, ("s", thread), ids), ids))
        last[thread] = ids
    refs: dict[str, int] = {}
    for _, d, _ in deltas:
        if d.base_id is not None:
            refs[d.base_id] = refs.get(d.base_id, 0) + 1
    dec = HashDeltaDecoder(refs)
    for rid, d, ids in deltas:
        assert dec.decode(rid, d.base_id, d.base_len, d.delta) == ids
        assert d.base_id is None or len(d.delta) <= len(ids)


@given(st.lists(st.integers(-(2**63), 2**63 - 2), max_size=40))
def test_runs_round_trip_and_are_shorter(ids: list[int]) -> None:
    runs = to_runs(tuple(ids))
    if runs is not None:
        assert from_runs(runs) == ids and 2 * len(runs) <= len(ids)
    assert to_runs(tuple(range(5, 105))) == [5, 100]


def test_a_thread_stores_only_what_each_turn_appends(tmp_path: Path) -> None:
    exs = growing_thread(60)
    path = tmp_path / "t.parquet"
    write_trace(path, exs, trace_id="T")
    table = pq.read_table(path)
    stored = sum(len(x) for x in table.column("hash_ids_delta").to_pylist())
    total = sum(len(ex.hash_ids or ()) for ex in exs)
    assert stored <= 21 * 60 and total > 20 * stored  # each turn: its new ids, +1 rehashed
    assert table.column("hash_ids").null_count == table.num_rows  # v1's column: unused
    assert read_trace(path) == exs
    # the spool holds the same deltas, consecutive ids as [first, count] runs
    with TraceWriter(tmp_path / "s.parquet", trace_id="T") as w:
        for ex in exs:
            w.append(ex)
        spool = spool_path(tmp_path / "s.parquet").read_bytes()
        assert len(spool) < 500 * len(exs)  # ~1,200 ids a row by the end: ~20 bytes of them
    assert read_trace(tmp_path / "s.parquet") == exs


def test_projection_reads_no_hash_ids_and_expands_them_on_demand(tmp_path: Path) -> None:
    exs = growing_thread(5, "a") + growing_thread(4, "b", start=10**6)
    path = tmp_path / "t.parquet"
    write_trace(path, exs, trace_id="T")
    meta = list(iter_records(path, METADATA_COLUMNS))
    assert [r["request_id"] for r in meta] == [ex.request_id for ex in exs]
    assert "hash_ids" not in meta[0] and meta[0]["prompt_tokens"] == exs[0].usage.prompt_tokens
    ids = list(iter_records(path, ["request_id", "hash_ids"], sessions={"b"}))
    assert [(r["request_id"], r["hash_ids"]) for r in ids] == [
        (ex.request_id, ex.hash_ids) for ex in exs if ex.session_id == "b"
    ]
    light = list(iter_exchanges(path, columns=["session_id", "thread_id", "request_id"]))
    assert all(ex.hash_ids is None and ex.usage.prompt_tokens is None for ex in light)
    with pytest.raises(ValueError, match="unknown trace columns"):
        iter_records(path, ["nope"])


def test_session_filter_uses_row_group_statistics(tmp_path: Path) -> None:
    from agentx.store import writer

    exs = [ex for s in range(6) for ex in growing_thread(300, f"s{s}", start=10**6 * s)]
    path = tmp_path / "t.parquet"
    write_trace(path, exs, trace_id="T")
    assert pq.ParquetFile(path).num_row_groups == -(-len(exs) // writer.ROW_GROUP_ROWS)
    got = list(iter_exchanges(path, sessions={"s4", "s1"}))
    assert got == [ex for ex in exs if ex.session_id in ("s1", "s4")]


def test_a_v1_file_still_reads(
    tmp_path: Path, write_v1_trace: Callable[[Path, Sequence[Exchange]], None]
) -> None:
    """A file written before v1.1: full ``hash_ids`` per row, no delta columns."""
    exs = growing_thread(4)
    path = tmp_path / "v1.parquet"
    write_v1_trace(path, exs)
    assert open_trace(path).format == "agentx.trace/1"
    assert read_trace(path) == exs


def test_spool_lines_omit_nulls(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t.parquet") as w:
        w.append(growing_thread(1)[0])
        line = spool_path(tmp_path / "t.parquet").read_bytes().splitlines()[1]
    row = orjson.loads(line)
    assert None not in row.values() and row["hash_ids_delta~"] == [0, 20]
