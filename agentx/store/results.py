"""``requests.parquet``: one row per replayed request (:class:`agentx.record.RequestRecord`).

The Arrow schema is derived from the record's fields, so a field added to the record (with a
default) becomes a column without touching this file; files written before it read back with
the default. ``itl_ns`` is ``list<int64>``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentx import __version__
from agentx.errors import TraceError
from agentx.outputs import atomic_output
from agentx.record import RequestRecord
from agentx.store.schema import META_FORMAT, META_VERSION

FORMAT = "agentx.requests/1"


def _arrow_type(annotation: str) -> pa.DataType:
    a = annotation.replace(" ", "")
    if a.startswith("tuple[int"):
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


def write_requests(path: str | os.PathLike[str], records: Sequence[RequestRecord]) -> None:
    """Write ``records`` (in the given order) to ``path`` atomically (temp file + rename)."""
    p = Path(path)
    columns: dict[str, list[Any]] = {f.name: [] for f in FIELDS}
    for r in records:
        for f in FIELDS:
            value = getattr(r, f.name)
            columns[f.name].append(list(value) if isinstance(value, tuple) else value)
    table = pa.table(columns, schema=SCHEMA)
    with atomic_output(p, force=True) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_requests(path: str | os.PathLike[str]) -> list[RequestRecord]:
    p = Path(path)
    try:
        table = pq.read_table(p)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(f"{p}: not a readable requests.parquet ({exc})") from None
    names = set(table.column_names)
    known = [f for f in FIELDS if f.name in names]
    required = [
        f.name
        for f in FIELDS
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in names]
    if missing:
        raise TraceError(f"{p}: not a requests.parquet (missing columns: {', '.join(missing)})")
    data = {f.name: table.column(f.name).to_pylist() for f in known}
    out = []
    for i in range(table.num_rows):
        kwargs = {f.name: data[f.name][i] for f in known}
        if "itl_ns" in kwargs:
            kwargs["itl_ns"] = tuple(kwargs["itl_ns"] or ())
        out.append(RequestRecord(**kwargs))
    return out
