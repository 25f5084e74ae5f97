"""A trace's block-id columns as arrays: what the recorded simulation reads of hash-only rows.

Each row's ids come straight from Arrow (list offsets into one values array), as stored: the
delta of trace format v1.1 (``hash_ids_base_id``, ``hash_ids_base_len``, ``hash_ids_delta``:
the base's first ``base_len`` ids, then the delta; see :mod:`agentx.store.hashdelta`) or a v1
row's full ``hash_ids`` (``base_id`` ``None``). No exchange, no id tuple is built: a reader
chains each row from its base and pays for its new ids only. Bases are per file, as the row
decoder's are (:attr:`BlockFile.base_refs`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.errors import TraceError
from agentx.core.progress import Progress
from agentx.store.reader import _first_line, _open_file, open_trace

IdValues = npt.NDArray[np.int64]
_SCALARS = (
    "request_id",
    "session_id",
    "thread_id",
    "api",
    "flags",
    "prompt_tokens",
    "completion_tokens",
    "start_wall_ns",
    "e2e_ns",
    "api_time_s",
    "hash_block_size",
    "hash_ids_base_id",
    "hash_ids_base_len",
)


@dataclass(frozen=True, slots=True)
class BlockRows:
    """A slice of a file's rows: small columns as lists (``None`` where null), and each row's
    stored ids as ``values[starts[i]:ends[i]]`` (``has_ids[i]`` False: a text row)."""

    columns: dict[str, list[Any]]
    has_ids: npt.NDArray[np.bool_]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    values: IdValues

    @property
    def num_rows(self) -> int:
        return int(self.has_ids.size)


@dataclass(frozen=True, slots=True)
class BlockFile:
    """One file of a trace: how many rows name each row as their ids' base, then its rows."""

    base_refs: dict[str, int]
    rows: Iterator[BlockRows]


def iter_block_files(
    path: str | os.PathLike[str], *, progress: Progress | None = None
) -> Iterator[BlockFile]:
    """The files of an agentx trace (checked and recovered now, not on the first ``next``), in
    reading order. ``progress`` advances in rows."""
    info = open_trace(path)
    prog = progress or Progress()
    return (_block_file(f, prog) for f in info.files)


def _block_file(path: Path, progress: Progress) -> BlockFile:
    try:
        fi = _open_file(path)
        pf = pq.ParquetFile(path)
        refs: Counter[str] = Counter()
        if "hash_ids_base_id" in fi.columns:
            col = pf.read(columns=["hash_ids_base_id"]).column(0)
            refs.update(b for b in col.to_pylist() if b is not None)
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"{path}: corrupt trace ({_first_line(exc)})") from None
    return BlockFile(dict(refs), _rows(path, pf, fi.columns, progress))


def _rows(
    path: Path, pf: pq.ParquetFile, present: tuple[str, ...], progress: Progress
) -> Iterator[BlockRows]:
    lists = [c for c in ("hash_ids", "hash_ids_delta") if c in present]
    read = [c for c in _SCALARS if c in present] + lists
    try:
        for g in range(pf.num_row_groups):
            table = pf.read_row_group(g, columns=read)
            n = table.num_rows
            columns = {
                c: table.column(c).to_pylist() if c in present else [None] * n for c in _SCALARS
            }
            has_ids = np.zeros(n, dtype=np.bool_)
            starts = np.zeros(n, dtype=np.int64)
            ends = np.zeros(n, dtype=np.int64)
            parts: list[IdValues] = []
            offset = 0
            # a v1 row's full ids win over a delta, as the row decoder reads them
            for c in reversed(lists):
                valid, lo, hi, values = list_parts(table.column(c))
                take = valid & ~has_ids
                starts[take] = lo[take] + offset
                ends[take] = hi[take] + offset
                has_ids |= take
                parts.append(values)
                offset += int(values.size)
            values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            yield BlockRows(columns, has_ids, starts, ends, values)
            progress.advance(n)
            del table
            pa.default_memory_pool().release_unused()  # mimalloc keeps freed pages otherwise
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"{path}: corrupt trace ({_first_line(exc)})") from None


def list_parts(
    col: pa.ChunkedArray,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64], IdValues]:
    """``(valid, starts, ends, values)`` of a list column: row ``i`` is
    ``values[starts[i]:ends[i]]`` where ``valid[i]``."""
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    n = len(arr)
    if pa.types.is_null(arr.type) or n == 0:
        empty = np.zeros(n, dtype=np.int64)
        return np.zeros(n, dtype=np.bool_), empty, empty, np.zeros(0, dtype=np.int64)
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    values = arr.values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    valid = ~arr.is_null().to_numpy(zero_copy_only=False)
    return valid, offsets[:-1], offsets[1:], values
