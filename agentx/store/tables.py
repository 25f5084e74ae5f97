"""Plain Parquet tables that are not agentx traces (a Hugging Face dataset's rows), read row by
row so a large file never sits in memory whole. The store is agentx's only pyarrow importer."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.errors import FormatError
from agentx.store.schema import META_FORMAT

ROWS_PER_BATCH = 16  # a Weka trace row can hold tens of MB of hash ids
TEXT_BATCH_ROWS = 256


def parquet_columns(path: str | os.PathLike[str]) -> tuple[frozenset[str], bool]:
    """The top-level column names of a Parquet file, and whether it is an agentx trace."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(str(path), f"not a readable Parquet file ({exc})") from None
    meta = schema.metadata or {}
    return frozenset(schema.names), META_FORMAT in meta


def iter_parquet_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every row as a dict of Python values (extension types such as ``arrow.json`` as their
    storage: JSON text)."""
    try:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=ROWS_PER_BATCH):
            yield from batch.to_pylist()
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(str(path), f"cannot read Parquet rows ({exc})") from None


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_text(t.value_type)


def iter_text_values(path: str | os.PathLike[str]) -> Iterator[tuple[str, int, str]]:
    """``(column, row, text)`` of every string of every text column (a list of strings gives
    each), as stored: what a secret scan of a packed Parquet file reads."""
    try:
        pf = pq.ParquetFile(path)
        names = [f.name for f in pf.schema_arrow if _is_text(f.type)]
        row0 = 0
        for batch in pf.iter_batches(batch_size=TEXT_BATCH_ROWS, columns=names):
            for name in names:
                for i, v in enumerate(batch.column(name).to_pylist()):
                    if isinstance(v, str):
                        yield name, row0 + i, v
                    elif isinstance(v, list):
                        yield from ((name, row0 + i, s) for s in v if isinstance(s, str))
            row0 += batch.num_rows
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(str(path), f"cannot read Parquet rows ({exc})") from None


def jsonl_to_parquet(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    json_lists: tuple[str, ...] = (),
) -> int:
    """The objects of a ``.jsonl`` file as the rows of a Parquet file, as the ``datasets`` JSON
    loader reads them: columns inferred (fields a row lacks are nulls), and each element of the
    ``json_lists`` fields kept as JSON text of the ``arrow.json`` type (``datasets``' ``Json``
    feature: what it makes of a list whose elements are objects of different shapes, Weka's
    ``requests``), so a reader gets every element back as it was. A packed dataset's Weka and
    Mooncake exports become configs ``datasets.load_dataset`` reads. Returns the rows."""
    import tempfile

    import orjson
    import pyarrow.json as pj

    src = Path(source)
    try:
        longest = 1
        with tempfile.TemporaryDirectory(dir=Path(target).parent) as tmp:
            lines = src
            if json_lists:
                lines = Path(tmp) / src.name
                with open(src, "rb") as fh, open(lines, "wb") as out:
                    for line in fh:
                        if not line.strip():
                            continue
                        doc = orjson.loads(line)
                        for key in json_lists:
                            value = doc.get(key)
                            if isinstance(value, list):
                                doc[key] = [orjson.dumps(v).decode() for v in value]
                        out.write(orjson.dumps(doc) + b"\n")
            with open(lines, "rb") as fh:
                for line in fh:
                    longest = max(longest, len(line))
            options = pj.ReadOptions(block_size=max(1 << 20, longest + 1))
            table = pj.read_json(lines, read_options=options)
        for key in json_lists:
            if key in table.column_names:
                i = table.column_names.index(key)
                column = table.column(i).cast(pa.list_(pa.json_()))
                table = table.set_column(i, pa.field(key, column.type), column)
        pq.write_table(table, target, compression="zstd")
    except (OSError, pa.ArrowInvalid, orjson.JSONDecodeError) as exc:
        raise FormatError(str(source), f"cannot write its rows as Parquet ({exc})") from None
    return int(table.num_rows)


def parquet_rows(path: str | os.PathLike[str]) -> int:
    """The rows of a Parquet file, from its footer."""
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(str(path), f"not a readable Parquet file ({exc})") from None
