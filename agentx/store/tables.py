"""Plain Parquet tables that are not agentx traces (a Hugging Face dataset's rows), read row by
row so a large file never sits in memory whole. The store is agentx's only pyarrow importer."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.errors import FormatError
from agentx.store.schema import META_FORMAT

ROWS_PER_BATCH = 16  # a Weka trace row can hold tens of MB of hash ids


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
