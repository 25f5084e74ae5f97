"""Write -> read reconstructs every exchange exactly, and storage grows with what is appended."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from agentx import DISTRIBUTION, __version__
from agentx.apis import Api
from agentx.core.models import Exchange, Timing
from agentx.store import TraceWriter, iter_exchanges, open_trace, read_trace, write_trace
from agentx.store.codec import DeltaDecoder, DeltaEncoder
from agentx.store.spool import line_row, row_line

from .strategies import exchange_sequences


def exact(value: Any) -> str:
    """A spelling that tells 1 from 1.0 from True and keeps key order (and survives surrogates)."""
    return json.dumps(value, ensure_ascii=True)


def assert_same(written: list[Exchange], read: list[Exchange], trace_id: str) -> None:
    assert len(read) == len(written)
    for a, b in zip(written, read, strict=True):
        assert exact(b.request) == exact(a.request), a.request_id
        assert exact(b.response.message) == exact(a.response.message)
        assert replace(b, request=None, response=replace(b.response, message=None)) == replace(
            a,
            trace_id=a.trace_id or trace_id,
            request=None,
            response=replace(a.response, message=None),
        )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchange_sequences(max_requests=16))
def test_codec_round_trips_any_request_sequence(exchanges: list[Exchange]) -> None:
    """Encoder -> spool line -> decoder, without Parquet: many examples, fast."""
    rows = []
    encoder = DeltaEncoder()
    for ex in exchanges:
        rows.append(line_row(orjson.loads(row_line(encoder.encode(replace(ex, trace_id="T"))))))
    refs = Counter(r["conversation_base_id"] for r in rows if r["conversation_base_id"])
    hash_refs = Counter(r["hash_ids_base_id"] for r in rows if r["hash_ids_base_id"])
    for shared in (False, True):
        decoder = DeltaDecoder(dict(refs), shared=shared, hash_refcounts=dict(hash_refs))
        assert_same(exchanges, [decoder.decode(r) for r in rows], "T")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchange_sequences())
def test_any_request_sequence_round_trips_exactly(exchanges: list[Exchange]) -> None:
    """The same through a real Parquet file, both read modes."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.parquet"
        write_trace(path, exchanges, trace_id="T")
        assert_same(exchanges, read_trace(path), "T")
        assert_same(exchanges, list(iter_exchanges(path, shared=True)), "T")


def _growing_session(turns: int) -> list[Exchange]:
    system = [
        {
            "type": "text",
            "text": "You are a coding agent. " * 50,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    tools = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}]
    conv: list[Any] = []
    out = []
    for i in range(turns):
        conv = [
            *conv,
            {
                "role": "user",
                "content": [{"type": "text", "text": f"step {i}: " + "lorem ipsum " * 40}],
            },
        ]
        body = {
            "model": "claude",
            "max_tokens": 1024,
            "system": system,
            "tools": tools,
            "messages": conv,
        }
        out.append(
            Exchange(
                request_id=f"r{i}",
                session_id="s",
                thread_id="main",
                api=Api.ANTHROPIC_MESSAGES,
                request=json.loads(json.dumps(body)),  # a fresh object tree, as a parser makes
                timing=Timing(start_wall_ns=i),
                parent_request_id=f"r{i - 1}" if i else None,
            )
        )
        conv = [*conv, {"role": "assistant", "content": [{"type": "text", "text": f"done {i}"}]}]
    return out


def test_each_row_stores_only_what_it_appends(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    exchanges = _growing_session(30)
    write_trace(path, exchanges)
    table = pq.read_table(
        path,
        columns=[
            "request_id",
            "conversation_base_id",
            "conversation_base_len",
            "conversation_delta",
        ],
    )
    rows = table.to_pylist()
    assert rows[0]["conversation_base_id"] is None
    assert len(json.loads(rows[0]["conversation_delta"])) == 1
    for i, row in enumerate(rows[1:], start=1):
        assert row["conversation_base_id"] == f"r{i - 1}"
        assert row["conversation_base_len"] == 2 * i - 1
        assert len(json.loads(row["conversation_delta"])) == 2  # last answer + new user turn
    # every delta together is the final conversation, once: linear, not quadratic
    stored = sum(len(r["conversation_delta"]) for r in rows)
    final = len(json.dumps(exchanges[-1].request["messages"], separators=(",", ":")))
    assert stored < 1.05 * final


def test_copies_are_independent_but_shared_mode_shares(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_trace(path, _growing_session(3))
    a, b, _ = read_trace(path)
    a.request["messages"][0]["content"][0]["text"] = "mutated"
    assert b.request["messages"][0]["content"][0]["text"].startswith("step 0")
    sa, sb, _ = iter_exchanges(path, shared=True)
    assert sa.request["messages"][0] is sb.request["messages"][0]
    assert sa.request["system"] is sb.request["system"]


def test_metadata_and_version_are_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    with TraceWriter(path, trace_id="abc", metadata={"agent": "claude-code"}) as w:
        for ex in _growing_session(2):
            w.append(ex)
    info = open_trace(path)
    assert (info.format, info.trace_id, info.metadata, info.num_rows) == (
        "agentx.trace/1.2",
        "abc",
        {"agent": "claude-code"},
        2,
    )
    assert (info.version, info.writer) == (__version__, f"{DISTRIBUTION} {__version__}")
    meta = pq.read_schema(path).metadata
    assert meta[b"agentx.format"] == b"agentx.trace/1.2"
    assert meta[b"agentx.version"] == __version__.encode()
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert all(ex.trace_id == "abc" for ex in read_trace(path))


def test_empty_trace_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    assert write_trace(path, []) == 0
    assert read_trace(path) == []


def test_unserialisable_body_is_a_trace_error(tmp_path: Path) -> None:
    from agentx.core.errors import TraceError

    ex = replace(_growing_session(1)[0], request={"messages": [{"x": object()}]})
    with TraceWriter(tmp_path / "t.parquet") as w, pytest.raises(TraceError, match="r0"):
        w.append(ex)


def test_a_v1_1_file_reads_with_no_host(tmp_path: Path) -> None:
    """A file written before v1.2: no ``host`` column; its rows read with the host unknown, and
    a v1.2 file keeps the host capture recorded."""
    import pyarrow as pa

    from agentx.store.schema import COLUMNS_V1_1, SCHEMA

    exs = [replace(ex, host="api.example.com") for ex in _growing_session(3)]
    path = tmp_path / "t.parquet"
    write_trace(path, exs, trace_id="T")
    assert [ex.host for ex in read_trace(path)] == ["api.example.com"] * 3
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[b"agentx.format"] = b"agentx.trace/1.1"
    old = pa.schema([SCHEMA.field(c) for c in COLUMNS_V1_1]).with_metadata(meta)
    pq.write_table(table.select(list(COLUMNS_V1_1)).cast(old), path)
    assert open_trace(path).format == "agentx.trace/1.1"
    assert read_trace(path) == [replace(ex, host=None, trace_id="T") for ex in exs]
