"""Reading a trace in parts: the metadata of every row, then chosen rows on demand.

:func:`read_index` reads only the small per-row columns (ids, structure, timings, token counts,
flags: no request bodies, no response text, no block ids) of one trace file into
:class:`~agentx.core.models.ExchangeMeta` values whose ``locator`` is the row number.
:meth:`TraceIndex.read_rows` decodes chosen rows with their full bodies and block ids: a row
stored as a delta over an earlier row (its conversation, ``conversation_base_id``; its block
ids, ``hash_ids_base_id`` in format v1.1) needs that row too, so the rows it extends
(transitively, through either column) are decoded with it, and only the row groups holding them
are read. Files of format v1 (full ``hash_ids``) and v1.1 are read alike.

A dataset directory is a list of such files (:func:`dataset_files`); each is indexed on its own.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from agentx.core.errors import TraceError
from agentx.core.models import Exchange, ExchangeMeta
from agentx.store.codec import DeltaDecoder
from agentx.store.dataset import trace_files
from agentx.store.reader import _first_line, _open_file, open_trace
from agentx.store.schema import COLUMNS
from agentx.store.spool import REPEATED_COLUMNS

T = TypeVar("T")
GROUPS_KEPT = 2  # row groups kept decoded: the sessions read one after another share them
FILES_KEPT = 8

INDEX_COLUMNS = (
    "session_id",
    "thread_id",
    "request_id",
    "parent_request_id",
    "api",
    "status",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "start_wall_ns",
    "ttft_ns",
    "e2e_ns",
    "think_time_s",
    "api_time_s",
    "flags",
    "hash_block_size",
    "conversation_key",
)
BASE_COLUMNS = ("conversation_base_id", "hash_ids_base_id")  # the second one: v1.1 only
# columns of few distinct values (a session's rows share ids, a trace's its model and api),
# held once each in the index (~48 bytes a str a row saved, tens of MB on a large corpus)
SHARED_COLUMNS = ("session_id", "thread_id", "api", "model")
# the columns the index holds otherwise: ids resolved to rows, flags to a few shared tuples, two
# columns only asked whether they are null
DERIVED_COLUMNS = ("parent_request_id", "flags", "hash_block_size", "conversation_key")
# the columns whose values the index keeps as they are
PLAIN_COLUMNS = tuple(c for c in INDEX_COLUMNS if c not in (*SHARED_COLUMNS, *DERIVED_COLUMNS))


@dataclass(slots=True)
class GroupCache:
    """The last few row groups read (a row group holds ~1,000 rows: a dozen sessions of a
    corpus, read one after another as replay's lanes start them)."""

    kept: int = GROUPS_KEPT
    # by (file, group, what was read of it): a reader of some columns keeps its own form
    _tables: OrderedDict[tuple[Path, int, str], Any] = field(default_factory=OrderedDict)
    # the last files read, open (a footer parsed once, not once per session; a dataset of
    # thousands of files keeps a few open, not thousands of descriptors)
    _files: OrderedDict[Path, pq.ParquetFile] = field(default_factory=OrderedDict)

    def file(self, path: Path, open_file: Callable[[], pq.ParquetFile]) -> pq.ParquetFile:
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = open_file()
            while len(self._files) > FILES_KEPT:
                self._files.popitem(last=False)
        else:
            self._files.move_to_end(path)
        return found

    def get(self, path: Path, group: int, read: Callable[[], T], part: str = "rows") -> T:
        key = (path, group, part)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = read()
            while len(self._tables) > self.kept:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(key)
        out: T = table
        return out


@dataclass(frozen=True, slots=True)
class TraceIndex:
    """Every row of one trace file as metadata, in file order."""

    path: Path
    rows: tuple[ExchangeMeta, ...]
    bases: tuple[npt.NDArray[np.int64], ...]  # per base column: each row's base row, -1: none
    group_starts: tuple[int, ...]  # first row number of each row group
    columns: tuple[str, ...]  # the trace columns the file has

    def read_rows(self, rows: Sequence[int], groups: GroupCache | None = None) -> list[Exchange]:
        """The exchanges of rows ``rows`` (row numbers), in that order, with full bodies.
        ``groups`` keeps the last row groups read, for callers reading session after session."""
        needed: set[int] = set()
        todo = list(rows)
        while todo:
            r = todo.pop()
            if r < 0 or r in needed:
                continue
            needed.add(r)
            todo.extend(int(b[r]) for b in self.bases)
        ordered = sorted(needed)
        refs = [
            Counter(self.rows[int(b[r])].request_id for r in ordered if b[r] >= 0)
            for b in self.bases
        ]
        decoded: dict[int, Exchange] = {}
        present = list(self.columns)
        nulls = {c: None for c in COLUMNS if c not in self.columns}  # a v1 file's v1.1 ones
        try:
            opened = functools.partial(
                pq.ParquetFile, self.path, read_dictionary=list(REPEATED_COLUMNS)
            )
            pf = opened() if groups is None else groups.file(self.path, opened)
            decoder = DeltaDecoder(
                dict(refs[0]), shared=True, hash_refcounts=dict(refs[1]) if len(refs) > 1 else {}
            )
            starts = np.asarray(self.group_starts, dtype=np.int64)
            by_group: dict[int, list[int]] = {}
            for r in ordered:
                by_group.setdefault(int(np.searchsorted(starts, r, side="right")) - 1, []).append(r)
            for g, members in sorted(by_group.items()):
                read = functools.partial(pf.read_row_group, g, columns=present, use_threads=False)
                table = read() if groups is None else groups.get(self.path, g, read)
                local = _int64_array([r - self.group_starts[g] for r in members])
                for r, row in zip(members, table.take(local).to_pylist(), strict=True):
                    decoded[r] = decoder.decode(row | nulls if nulls else row)
        except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
            raise TraceError(f"{self.path}: corrupt trace ({_first_line(exc)})") from None
        return [decoded[r] for r in rows]


def dataset_files(path: str | os.PathLike[str]) -> list[Path]:
    """The trace files of a trace argument (a file, or a dataset directory's files in order),
    recovered first if a writer died."""
    open_trace(path)  # checks every file (and recovers a dataset's)
    return trace_files(path)


def sessions_per_file_known(files: Sequence[Path]) -> bool:
    """Whether every file holds exactly one session, by its footer's ``session_id`` statistics
    alone (a dataset imported from Weka files: one file per session)."""
    seen: set[str] = set()
    for f in files:
        try:
            md = pq.ParquetFile(f).metadata
            col = md.schema.to_arrow_schema().get_field_index("session_id")
            ids = set()
            for g in range(md.num_row_groups):
                stats = md.row_group(g).column(col).statistics
                if stats is None or not stats.has_min_max or stats.min != stats.max:
                    return False
                ids.add(stats.min)
        except (pa.ArrowException, OSError) as exc:
            raise TraceError(f"{f}: not a readable Parquet trace ({_first_line(exc)})") from None
        if len(ids) != 1 or not ids.isdisjoint(seen):
            return False
        seen |= ids
    return True


def read_index(path: str | os.PathLike[str], first_locator: int = 0) -> TraceIndex:
    """The metadata of every row of one agentx trace file (recovered first if its writer died);
    row ``i``'s ``locator`` is ``first_locator + i`` (a dataset's files number theirs apart)."""
    fi = _open_file(Path(path))
    present = [c for c in BASE_COLUMNS if c in fi.columns]
    try:
        pf = pq.ParquetFile(fi.info.path)
        table = pf.read(columns=[*INDEX_COLUMNS, *present], use_threads=False)
        starts = []
        n = 0
        for g in range(pf.num_row_groups):
            starts.append(n)
            n += pf.metadata.row_group(g).num_rows
        cols = {name: column_values(table.column(name)) for name in PLAIN_COLUMNS}
        for name in SHARED_COLUMNS:  # one str object per distinct value, not one per row
            cols[name] = shared_values(table.column(name))
        flag_sets = _flag_sets(table.column("flags"))
        prompt = _valid(table.column("conversation_key"))
        hashed = _valid(table.column("hash_block_size"))
        ids = cols["request_id"]
        row_of = {rid: i for i, rid in enumerate(ids)}
        if len(row_of) == n:  # a parent's id: its row's own str where the row is in the file
            request_ids = table.column("request_id")
            parents = _row_numbers(table.column("parent_request_id"), request_ids)
            named = table.column("parent_request_id")
            cols["parent_request_id"] = [
                ids[j] if j >= 0 else None if j == -1 else named[i].as_py()
                for i, j in enumerate(parents.tolist())
            ]
            bases = tuple(
                np.maximum(_row_numbers(table.column(c), request_ids), -1) for c in present
            )
        else:  # ids repeated: the last row of an id is the one named
            cols["parent_request_id"] = [
                p if p is None or (j := row_of.get(p)) is None else ids[j]
                for p in column_values(table.column("parent_request_id"))
            ]
            bases = tuple(
                np.fromiter(
                    (
                        row_of.get(b, -1) if b is not None else -1
                        for b in column_values(table.column(c))
                    ),
                    dtype=np.int64,
                    count=n,
                )
                for c in present
            )
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise TraceError(f"{fi.info.path}: corrupt trace ({_first_line(exc)})") from None
    del table
    metas = []
    for i in range(n):
        hash_only = not prompt[i] and hashed[i]
        metas.append(
            ExchangeMeta(
                request_id=ids[i],
                session_id=cols["session_id"][i],
                thread_id=cols["thread_id"][i],
                api=cols["api"][i],
                start_wall_ns=cols["start_wall_ns"][i],
                e2e_ns=cols["e2e_ns"][i],
                ttft_ns=cols["ttft_ns"][i],
                parent_request_id=cols["parent_request_id"][i],
                status=cols["status"][i],
                model=cols["model"][i],
                prompt_tokens=cols["prompt_tokens"][i],
                completion_tokens=cols["completion_tokens"][i],
                think_time_s=cols["think_time_s"][i],
                api_time_s=cols["api_time_s"][i],
                flags=flag_sets[i],
                hash_only=hash_only,
                has_prompt=hash_only or prompt[i],
                locator=first_locator + i,
            )
        )
    return TraceIndex(fi.info.path, tuple(metas), bases, tuple(starts), fi.columns)


def column_values(col: pa.ChunkedArray) -> list[Any]:
    """``col.to_pylist()``, read from the column's buffers: ``to_pylist`` makes a pyarrow scalar
    a value, and those temporaries, freed amid the values the index keeps, leave the process's
    small-object arenas part-used (tens of MB of RSS on a 48K-row index); pyarrow's own numpy
    conversions import pandas (~60 MB). Numbers, strings and lists of strings; another type is
    left to ``to_pylist``."""
    kind = col.type
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if len(arr) == 0:
        return []
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        dtype = np.dtype(kind.to_pandas_dtype())
        data = np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + len(arr))
        return _with_nulls(data[arr.offset :].tolist(), arr)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _with_nulls(_strings(arr), arr)
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        starts = _offsets(arr)
        values = _with_nulls(_strings(arr.values), arr.values)
        return _with_nulls([values[a:b] for a, b in itertools.pairwise(starts)], arr)
    out: list[Any] = col.to_pylist()
    return out


def _offsets(arr: pa.Array) -> list[int]:
    """The ``len + 1`` value offsets of a string or list array (into its whole values)."""
    dtype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + len(arr) + 1)
    out: list[int] = offsets[arr.offset :].tolist()
    return out


def _strings(arr: pa.Array) -> list[str]:
    starts = _offsets(arr)
    buf = arr.buffers()[2]
    raw = buf.to_pybytes() if buf is not None else b""
    text = raw.decode()
    if len(text) == len(raw):  # ASCII: character offsets are byte offsets
        return [text[a:b] for a, b in itertools.pairwise(starts)]
    return [raw[a:b].decode() for a, b in itertools.pairwise(starts)]


def _with_nulls(values: list[Any], arr: pa.Array) -> list[Any]:
    if arr.null_count:
        bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
        valid = np.unpackbits(bits, bitorder="little", count=arr.offset + len(arr))[arr.offset :]
        for i in np.flatnonzero(valid == 0).tolist():
            values[i] = None
    return values


def shared_values(col: pa.ChunkedArray) -> list[Any]:
    """``col.to_pylist()`` with equal values one object: each distinct value decoded once (a
    column of few distinct values), not one object a row made and dropped."""
    encoded = pc.dictionary_encode(col.combine_chunks())
    values = column_values(pa.chunked_array([encoded.dictionary]))
    codes = column_values(pa.chunked_array([encoded.indices]))
    return [None if c is None else values[c] for c in codes]


def _valid(col: pa.ChunkedArray) -> list[bool]:
    """Whether each value of ``col`` is not null."""
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if arr.null_count == 0:
        return [True] * len(arr)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bits, bitorder="little", count=arr.offset + len(arr))[arr.offset :]
    out: list[bool] = valid.astype(bool).tolist()
    return out


def _row_numbers(col: pa.ChunkedArray, ids: pa.ChunkedArray) -> npt.NDArray[np.int64]:
    """The row of ``ids`` each value of ``col`` names: -1 for a null, -2 for an id not there
    (``ids`` unique)."""
    found = pc.index_in(col, value_set=ids.combine_chunks())
    rows = np.asarray([-2 if r is None else r for r in column_values(found)], dtype=np.int64)
    rows[np.asarray(_valid(col), dtype=bool) == 0] = -1
    return rows


def _flag_sets(col: pa.ChunkedArray) -> list[tuple[str, ...]]:
    """Each row's flags as a tuple (a null list: none), equal sets one tuple (a few distinct)."""
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    values = arr.values
    if values.null_count:
        lists = column_values(col)
        seen: dict[tuple[str, ...], tuple[str, ...]] = {}
        return [seen.setdefault(t := tuple(v or ()), t) for v in lists]
    encoded = pc.dictionary_encode(values)
    names = column_values(pa.chunked_array([encoded.dictionary], values.type))
    codes = column_values(pa.chunked_array([encoded.indices]))
    sets: dict[tuple[int, ...], tuple[str, ...]] = {}
    out = []
    nulls = _valid(col)
    for (a, b), valid in zip(itertools.pairwise(_offsets(arr)), nulls, strict=True):
        key = tuple(codes[a:b]) if valid else ()
        found = sets.get(key)
        if found is None:
            found = sets[key] = tuple(names[c] for c in key)
        out.append(found)
    return out


def _int64_array(values: list[int]) -> pa.Array:
    """An int64 Arrow array from its buffer: ``pa.array`` imports pandas to ask whether its
    argument is a pandas object (~0.5 s and ~60 MB for every reader of a few rows)."""
    data = np.asarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), data.size, [None, pa.py_buffer(data)])
