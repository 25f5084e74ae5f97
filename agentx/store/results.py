"""``requests.parquet``: one row per replayed request (:class:`agentx.core.record.RequestRecord`).

The Arrow schema is derived from the record's fields, so a field added to the record (with a
default) becomes a column without touching this file; files written before it read back with
the default. ``itl_ns`` is ``list<int64>``: written from the rows' :class:`~agentx.core.record.Gaps`
arrays and read back as views of the column (no Python int per gap either way). The same
conversion serves the replay's spool of rows (:mod:`agentx.store.rowspool`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from agentx import __version__
from agentx.core.errors import TraceError
from agentx.core.outputs import atomic_output
from agentx.core.progress import Progress
from agentx.core.record import NO_GAPS, Gaps, RequestRecord
from agentx.store.schema import META_FORMAT, META_VERSION

FORMAT = "agentx.requests/1"


def _arrow_type(annotation: str) -> pa.DataType:
    a = annotation.replace(" ", "")
    if a == "Gaps":
        return pa.list_(pa.int64())
    if a.startswith("bool"):
        return pa.bool_()
    if a.startswith("int"):
        return pa.int64()
    if a.startswith("float"):
        return pa.float64()
    if a.startswith("str"):
        return pa.string()
    raise TypeError(f"RequestRecord field type {annotation!r} has no Parquet mapping")


FIELDS = tuple(dataclasses.fields(RequestRecord))
SCHEMA = pa.schema(
    [(f.name, _arrow_type(str(f.type))) for f in FIELDS],
    metadata={META_FORMAT: FORMAT.encode(), META_VERSION: __version__.encode()},
)


ROW_GROUP_ROWS = 16_384  # rows converted (and written) at a time
# columns dictionary-encoded: not the gaps, nearly all distinct (a dictionary tried on tens of
# millions of them is a fifth of the write, for a larger file)
DICTIONARY_COLUMNS = [f.name for f in FIELDS if f.name != "itl_ns"]


def batch_of(records: Sequence[RequestRecord]) -> pa.RecordBatch:
    """``records`` as one record batch of :data:`SCHEMA` (the gaps concatenated as arrays)."""
    columns: list[pa.Array] = []
    for f in FIELDS:
        if f.name == "itl_ns":
            gaps = [r.itl_ns.ns for r in records]
            offsets = np.zeros(len(gaps) + 1, dtype=np.int32)
            np.cumsum([g.size for g in gaps], out=offsets[1:])
            values = np.concatenate(gaps) if gaps else np.zeros(0, dtype=np.int64)
            columns.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)))
        else:
            columns.append(
                pa.array([getattr(r, f.name) for r in records], SCHEMA.field(f.name).type)
            )
    return pa.RecordBatch.from_arrays(columns, schema=SCHEMA)


def write_requests(
    path: str | os.PathLike[str],
    records: Sequence[RequestRecord],
    progress: Progress | None = None,
) -> None:
    """Write ``records`` (in the given order) to ``path`` atomically (temp file + rename),
    :data:`ROW_GROUP_ROWS` rows at a time (``progress`` advanced by each)."""
    prog = progress or Progress()
    p = Path(path)
    with (
        atomic_output(p, force=True) as tmp,
        pq.ParquetWriter(
            tmp, SCHEMA, compression="zstd", use_dictionary=DICTIONARY_COLUMNS
        ) as writer,
    ):
        for start in range(0, len(records), ROW_GROUP_ROWS):
            batch = batch_of(records[start : start + ROW_GROUP_ROWS])
            writer.write_table(pa.Table.from_batches([batch]), row_group_size=ROW_GROUP_ROWS)
            prog.advance(batch.num_rows)


def read_requests(path: str | os.PathLike[str]) -> list[RequestRecord]:
    p = Path(path)
    try:
        table = pq.read_table(p)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(f"{p}: not a readable requests.parquet ({exc})") from None
    names = set(table.column_names)
    required = [
        f.name
        for f in FIELDS
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in names]
    if missing:
        raise TraceError(f"{p}: not a requests.parquet (missing columns: {', '.join(missing)})")
    return list(records_of(table.to_batches()))


def records_of(
    batches: Iterator[pa.RecordBatch] | Sequence[pa.RecordBatch],
) -> Iterator[RequestRecord]:
    """The rows of ``batches`` (columns of :data:`SCHEMA`, any missing ones at their default).
    Each row's gaps are a view of its batch's ``itl_ns`` values; the strings repeated across
    rows (sessions, threads, errors) are one object each."""
    shared: dict[str, str] = {}
    for batch in batches:
        names = set(batch.schema.names)
        known = [f.name for f in FIELDS if f.name in names and f.name != "itl_ns"]
        data = {name: batch.column(name).to_pylist() for name in known}
        for name in ("session_id", "thread_id", "error_type", "error"):
            if name in data:
                data[name] = [v if v is None else shared.setdefault(v, v) for v in data[name]]
        gaps = _gaps(batch.column("itl_ns")) if "itl_ns" in names else None
        if gaps is not None and len(known) == len(FIELDS) - 1:  # every column: by position
            columns = [gaps if f.name == "itl_ns" else data[f.name] for f in FIELDS]
            for values in zip(*columns, strict=True):
                yield RequestRecord(*values)
            continue
        for i in range(batch.num_rows):
            kwargs: dict[str, Any] = {name: data[name][i] for name in known}
            if gaps is not None:
                kwargs["itl_ns"] = gaps[i]
            yield RequestRecord(**kwargs)


def _gaps(column: pa.Array) -> list[Gaps]:
    """A ``list<int64>`` column as one :class:`Gaps` view per row (null: no gaps), of one copy
    of its values (the buffer they were read into may hold the batch's other columns too)."""
    offsets = column.offsets.to_numpy()
    values = np.array(column.values.to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return [
        Gaps(values[offsets[i] : offsets[i + 1]]) if valid[i] else NO_GAPS
        for i in range(len(column))
    ]
