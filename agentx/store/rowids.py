"""A few rows' block ids as stored, by row number: a hash-only session read without its rows.

:meth:`agentx.store.select.TraceIndex.read_rows` decodes a row whole (an
:class:`~agentx.core.models.Exchange` with its ids rebuilt as a tuple of Python ints). A reader
that only chains a hash-only row's blocks needs what the file holds of them: the row its ids
extend, how many of that row's ids it keeps, and the ids it adds (format v1.1's
``hash_ids_base_id`` / ``hash_ids_base_len`` / ``hash_ids_delta``; a v1 row's full ``hash_ids``
is a delta over nothing), as an array. :func:`read_row_ids` gives those of the rows asked for
and of every row they extend, transitively, from the row groups that hold them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.errors import TraceError
from agentx.store.blockcols import IdValues, list_parts
from agentx.store.reader import _first_line
from agentx.store.select import BASE_COLUMNS, GroupCache, TraceIndex

HASH_BASE = "hash_ids_base_id"
_LISTS = ("hash_ids", "hash_ids_delta")  # a v1 row's full ids win over a delta, as decoded


@dataclass(frozen=True, slots=True)
class RowIds:
    """A row's block ids as stored: the first ``base_len`` ids of row ``base`` (``-1``: none),
    then ``delta``; ``block_size``: tokens a block (``None`` when the row has none)."""

    base: int
    base_len: int
    delta: IdValues
    block_size: int | None

    @property
    def size(self) -> int:
        """How many ids the row has."""
        return self.base_len + int(self.delta.size)


@dataclass(frozen=True, slots=True)
class _GroupIds:
    """One row group's block-id columns: row ``i``'s stored ids are ``values[starts[i]:ends[i]]``."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    full: npt.NDArray[np.bool_]  # v1's full ids: extending no base
    values: IdValues
    base_lens: list[int | None]
    block_sizes: list[int | None]


def _hash_bases(index: TraceIndex) -> npt.NDArray[np.int64] | None:
    """Each row's ids' base row (``-1``: none), or ``None`` for a file without the column."""
    present = [c for c in BASE_COLUMNS if c in index.columns]
    return index.bases[present.index(HASH_BASE)] if HASH_BASE in present else None


def read_row_ids(
    index: TraceIndex, rows: Sequence[int], groups: GroupCache | None = None
) -> dict[int, RowIds]:
    """The stored ids of rows ``rows`` (row numbers) and of the rows their ids extend. Raises
    :class:`TraceError` for a file that cannot be read, or a row extending one not before it."""
    bases = _hash_bases(index)
    needed = index.with_bases(rows, () if bases is None else (bases,))
    columns = [c for c in (*_LISTS, "hash_ids_base_len", "hash_block_size") if c in index.columns]
    out: dict[int, RowIds] = {}
    try:
        pf = index.parquet_file(groups)  # as the row reader opens it: one open file kept
        for g, members in index.by_group(needed).items():
            read = functools.partial(_group_ids, pf, g, columns)
            got = read() if groups is None else groups.get(index.path, g, read, part="ids")
            first = index.group_starts[g]
            for r in members:
                i = r - first
                base = int(bases[r]) if bases is not None and not got.full[i] else -1
                base_len = (got.base_lens[i] or 0) if base >= 0 else 0
                if base >= r:
                    raise TraceError(
                        f"{index.path}: corrupt trace (row {index.rows.request_id(r)} extends "
                        f"the ids of a row not before it)"
                    )
                # a copy: a view would keep the whole group's ids alive with the session's
                delta = got.values[got.starts[i] : got.ends[i]].copy()
                out[r] = RowIds(base, base_len, delta, got.block_sizes[i])
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"{index.path}: corrupt trace ({_first_line(exc)})") from None
    for r, ids in out.items():
        if ids.base >= 0 and ids.base_len > out[ids.base].size:
            raise TraceError(
                f"{index.path}: corrupt trace (row {index.rows.request_id(r)} extends "
                f"{ids.base_len} ids of {index.rows.request_id(ids.base)}, which has fewer)"
            )
    return out


def _group_ids(pf: pq.ParquetFile, group: int, columns: list[str]) -> _GroupIds:
    table = pf.read_row_group(group, columns=columns, use_threads=False)
    n = table.num_rows
    has = np.zeros(n, dtype=np.bool_)
    starts = np.zeros(n, dtype=np.int64)
    ends = np.zeros(n, dtype=np.int64)
    full = np.zeros(n, dtype=np.bool_)
    parts: list[IdValues] = []
    offset = 0
    for c in [c for c in _LISTS if c in columns]:
        valid, lo, hi, values = list_parts(table.column(c))
        take = valid & ~has
        starts[take] = lo[take] + offset
        ends[take] = hi[take] + offset
        has |= take
        if c == "hash_ids":
            full = take
        parts.append(values)
        offset += int(values.size)
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def small(name: str) -> list[int | None]:
        out: list[int | None] = table.column(name).to_pylist() if name in columns else [None] * n
        return out

    return _GroupIds(
        starts, ends, full, values, small("hash_ids_base_len"), small("hash_block_size")
    )
