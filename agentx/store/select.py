"""Reading a trace in parts: the metadata of every row, then chosen rows on demand.

:func:`read_index` reads only the small per-row columns (ids, structure, timings, token counts,
flags: no request bodies, no response text, no block ids) of one trace file into columns
(:class:`IndexRows`) that give each row as an :class:`~agentx.core.models.ExchangeMeta` whose
``locator`` is the row number when it is asked for.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast, overload

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
    rows: IndexRows
    bases: tuple[npt.NDArray[np.int64], ...]  # per base column: each row's base row, -1: none
    group_starts: tuple[int, ...]  # first row number of each row group
    columns: tuple[str, ...]  # the trace columns the file has

    def with_bases(
        self, rows: Sequence[int], bases: Sequence[npt.NDArray[np.int64]] | None = None
    ) -> list[int]:
        """``rows`` and every row they extend through ``bases`` (default: every base column),
        transitively, in file order."""
        through = self.bases if bases is None else bases
        needed: set[int] = set()
        todo = list(rows)
        while todo:
            r = todo.pop()
            if r < 0 or r in needed:
                continue
            needed.add(r)
            todo.extend(int(b[r]) for b in through)
        return sorted(needed)

    def by_group(self, ordered: Sequence[int]) -> dict[int, list[int]]:
        """Rows (in file order) by the row group holding them, groups in file order."""
        starts = np.asarray(self.group_starts, dtype=np.int64)
        out: dict[int, list[int]] = {}
        for r in ordered:
            out.setdefault(int(np.searchsorted(starts, r, side="right")) - 1, []).append(r)
        return dict(sorted(out.items()))

    def parquet_file(self, groups: GroupCache | None) -> pq.ParquetFile:
        """The file opened for reading rows (kept open by ``groups``, when given)."""
        opened = functools.partial(
            pq.ParquetFile, self.path, read_dictionary=list(REPEATED_COLUMNS)
        )
        return opened() if groups is None else groups.file(self.path, opened)

    def read_rows(self, rows: Sequence[int], groups: GroupCache | None = None) -> list[Exchange]:
        """The exchanges of rows ``rows`` (row numbers), in that order, with full bodies.
        ``groups`` keeps the last row groups read, for callers reading session after session."""
        ordered = self.with_bases(rows)
        refs = [
            Counter(self.rows.request_id(int(b[r])) for r in ordered if b[r] >= 0)
            for b in self.bases
        ]
        decoded: dict[int, Exchange] = {}
        present = list(self.columns)
        nulls = {c: None for c in COLUMNS if c not in self.columns}  # a v1 file's v1.1 ones
        try:
            pf = self.parquet_file(groups)
            decoder = DeltaDecoder(
                dict(refs[0]), shared=True, hash_refcounts=dict(refs[1]) if len(refs) > 1 else {}
            )
            for g, members in self.by_group(ordered).items():
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

        def column(name: str) -> pa.ChunkedArray:
            # one column at a time: a 200K-row corpus's index columns read together held
            # ~0.1 GB of Arrow memory at the peak, beside the columns built from them
            return pf.read(columns=[name], use_threads=False).column(name)

        starts = []
        n = 0
        for g in range(pf.num_row_groups):
            starts.append(n)
            n += pf.metadata.row_group(g).num_rows
        numbers = {name: _Numbers.of(column(name)) for name in NUMBER_COLUMNS}
        shared = {name: _Shared.of(column(name)) for name in SHARED_COLUMNS}
        flags = _Shared.flags(column("flags"))
        prompt = np.asarray(_valid(column("conversation_key")), dtype=bool)
        hashed = np.asarray(_valid(column("hash_block_size")), dtype=bool)
        request_ids = column("request_id")
        named = column("parent_request_id")
        parent_names: dict[int, str] = {}
        if len(pc.unique(request_ids)) == n:  # a parent in the file: its row's number
            parents = _row_numbers(named, request_ids)
            for i in np.flatnonzero(parents == -2).tolist():
                parent_names[i] = named[i].as_py()
            bases = tuple(np.maximum(_row_numbers(column(c), request_ids), -1) for c in present)
        else:  # ids repeated: a parent as its name; the last row of an id is the base named
            ids = column_values(request_ids)
            row_of = {rid: i for i, rid in enumerate(ids)}
            parents = np.full(n, -1, dtype=np.int64)
            for i, p in enumerate(column_values(named)):
                if p is not None:
                    parents[i], parent_names[i] = -2, p
            bases = tuple(
                np.fromiter(
                    (row_of.get(b, -1) if b is not None else -1 for b in column_values(column(c))),
                    dtype=np.int64,
                    count=n,
                )
                for c in present
            )
            del ids, row_of
        rows = IndexRows(
            first_locator=first_locator,
            request_ids=_Strings.of(request_ids),
            parents=parents,
            parent_names=parent_names,
            shared=shared,
            numbers=numbers,
            flags=flags,
            hash_only=~prompt & hashed,
            has_prompt=prompt | hashed,
        )
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise TraceError(f"{fi.info.path}: corrupt trace ({_first_line(exc)})") from None
    return TraceIndex(fi.info.path, rows, bases, tuple(starts), fi.columns)


NUMBER_COLUMNS = (
    "start_wall_ns",
    "e2e_ns",
    "ttft_ns",
    "status",
    "prompt_tokens",
    "completion_tokens",
    "think_time_s",
    "api_time_s",
)


@dataclass(frozen=True, slots=True)
class _Numbers:
    """A numeric column as a numpy array, its nulls apart (``valid``: ``None`` when none)."""

    values: npt.NDArray[Any]
    valid: npt.NDArray[np.bool_] | None

    @classmethod
    def of(cls, col: pa.ChunkedArray) -> _Numbers:
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        dtype = np.dtype(arr.type.to_pandas_dtype())
        if len(arr) == 0:
            return cls(np.zeros(0, dtype=dtype), None)
        data = np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + len(arr))
        values = data[arr.offset :].copy()  # its own memory, not a view of the table read
        if not arr.null_count:
            return cls(values, None)
        valid = np.asarray(_valid(col), dtype=bool)
        values[~valid] = 0
        return cls(values, valid)

    def get(self, i: int) -> Any:
        """Row ``i``'s value as ``to_pylist`` gives it (a Python int or float, or ``None``)."""
        if self.valid is not None and not self.valid[i]:
            return None
        return self.values[i].item()


@dataclass(frozen=True, slots=True)
class _Strings:
    """A string column as its UTF-8 bytes and offsets: a row's str is decoded when asked for
    (one str object a row, ~50 bytes beside its text, is what the index no longer holds)."""

    data: bytes
    offsets: npt.NDArray[np.int64]  # len + 1
    valid: npt.NDArray[np.bool_] | None

    @classmethod
    def of(cls, col: pa.ChunkedArray) -> _Strings:
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if len(arr) == 0:
            return cls(b"", np.zeros(1, dtype=np.int64), None)
        offsets = np.asarray(_offsets(arr), dtype=np.int64)
        buf = arr.buffers()[2]
        raw = buf.to_pybytes()[offsets[0] : offsets[-1]] if buf is not None else b""
        offsets -= offsets[0]
        valid = np.asarray(_valid(col), dtype=bool) if arr.null_count else None
        return cls(raw, offsets, valid)

    def get(self, i: int) -> str | None:
        if self.valid is not None and not self.valid[i]:
            return None
        return self.data[self.offsets[i] : self.offsets[i + 1]].decode()


@dataclass(frozen=True, slots=True)
class _Shared:
    """A column of few distinct values: each row's code into one object a distinct value
    (-1: null)."""

    codes: npt.NDArray[np.int32]
    values: tuple[Any, ...]

    @classmethod
    def of(cls, col: pa.ChunkedArray) -> _Shared:
        encoded = pc.dictionary_encode(col.combine_chunks())
        values = column_values(pa.chunked_array([encoded.dictionary]))
        return cls(_codes(encoded.indices), tuple(values))

    @classmethod
    def flags(cls, col: pa.ChunkedArray) -> _Shared:
        """Each row's flags as a tuple (a null list: none), one tuple a distinct set."""
        code_of: dict[int, int] = {}  # id of a shared tuple -> its code
        values: list[tuple[str, ...]] = []
        codes = np.empty(len(col), dtype=np.int32)
        for i, t in enumerate(_flag_sets(col)):
            c = code_of.get(id(t))
            if c is None:
                c = code_of[id(t)] = len(values)
                values.append(t)
            codes[i] = c
        return cls(codes, tuple(values))

    def get(self, i: int) -> Any:
        c = int(self.codes[i])
        return None if c < 0 else self.values[c]


def _codes(indices: pa.Array) -> npt.NDArray[np.int32]:
    """Dictionary indices as int32 codes, -1 for a null."""
    arr = indices.cast(pa.int32())
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int32)
    data = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + len(arr))
    codes = data[arr.offset :].copy()
    if arr.null_count:
        codes[~np.asarray(_valid(pa.chunked_array([arr])), dtype=bool)] = -1
    return codes


class IndexRows(Sequence[ExchangeMeta]):
    """A trace file's rows as :class:`~agentx.core.models.ExchangeMeta`, held as columns (numpy
    arrays, a str column's bytes, a code into the few distinct values of a shared column) and
    each row's object built when it is asked for: one object a row cost ~0.5 KB (~100 MB on a
    200K-row corpus, for the whole run), the columns ~0.1 KB. A row asked for twice is two
    equal objects."""

    __slots__ = (
        "_flags",
        "_has_prompt",
        "_hash_only",
        "_n",
        "_numbers",
        "_parent_names",
        "_parents",
        "_request_ids",
        "_shared",
        "first_locator",
    )

    def __init__(
        self,
        *,
        first_locator: int,
        request_ids: _Strings,
        parents: npt.NDArray[np.int64],
        parent_names: dict[int, str],
        shared: dict[str, _Shared],
        numbers: dict[str, _Numbers],
        flags: _Shared,
        hash_only: npt.NDArray[np.bool_],
        has_prompt: npt.NDArray[np.bool_],
    ) -> None:
        self.first_locator = first_locator
        self._n = len(parents)
        self._request_ids = request_ids
        self._parents = parents  # the parent's row, -1: none, -2: not in the file (named)
        self._parent_names = parent_names
        self._shared = shared
        self._numbers = numbers
        self._flags = flags
        self._hash_only = hash_only
        self._has_prompt = has_prompt

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> ExchangeMeta: ...
    @overload
    def __getitem__(self, i: slice) -> list[ExchangeMeta]: ...
    def __getitem__(self, i: int | slice) -> ExchangeMeta | list[ExchangeMeta]:
        if isinstance(i, slice):
            return [self._meta(j) for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("row out of range")
        return self._meta(i)

    def __iter__(self) -> Iterator[ExchangeMeta]:
        return (self._meta(i) for i in range(self._n))

    def request_id(self, i: int) -> str:
        """Row ``i``'s request id (typed as :class:`ExchangeMeta` types it: a file's null is
        ``None``, as it was decoded before)."""
        return cast(str, self._request_ids.get(i))

    def session_codes(self) -> tuple[npt.NDArray[np.int32], tuple[Any, ...]]:
        """Each row's session id as a code (-1: null) and the distinct ids the codes name."""
        s = self._shared["session_id"]
        return s.codes, s.values

    def _meta(self, i: int) -> ExchangeMeta:
        num = self._numbers
        shared = self._shared
        p = int(self._parents[i])
        parent = self._request_ids.get(p) if p >= 0 else self._parent_names.get(i)
        return ExchangeMeta(
            request_id=self.request_id(i),
            session_id=shared["session_id"].get(i),
            thread_id=shared["thread_id"].get(i),
            api=shared["api"].get(i),
            start_wall_ns=num["start_wall_ns"].get(i),
            e2e_ns=num["e2e_ns"].get(i),
            ttft_ns=num["ttft_ns"].get(i),
            parent_request_id=parent,
            status=num["status"].get(i),
            model=shared["model"].get(i),
            prompt_tokens=num["prompt_tokens"].get(i),
            completion_tokens=num["completion_tokens"].get(i),
            think_time_s=num["think_time_s"].get(i),
            api_time_s=num["api_time_s"].get(i),
            flags=self._flags.get(i),
            hash_only=bool(self._hash_only[i]),
            has_prompt=bool(self._has_prompt[i]),
            locator=self.first_locator + i,
        )


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
    found = _Numbers.of(pc.index_in(col, value_set=ids.combine_chunks()))
    rows = found.values.astype(np.int64)
    if found.valid is not None:
        rows[~found.valid] = -2
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
