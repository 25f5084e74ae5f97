"""Where a replay's requests come from: a metadata index first, sessions loaded on demand.

A :class:`TraceSource` does two things:

- :meth:`~TraceSource.index` yields each session as a :class:`SessionIndex`: the
  :class:`~agentx.core.models.ExchangeMeta` of its rows (ids, thread structure, timings, token
  counts, flags), never request bodies or block ids. The plan is built from this alone, and
  ``--sessions N`` samples before anything heavy is read: a Weka directory is sampled by file
  (:attr:`~TraceSource.candidates`) before any file is opened.
- :meth:`~TraceSource.load_session` returns a :class:`SessionLoader` whose
  :meth:`~SessionLoader.exchange` materialises one row with its body (or block ids) when a
  lane is about to send it: an agentx Parquet trace decodes the session's rows (and the rows
  they extend) from the row groups that hold them; a Weka file is read back at the byte span
  of the request's id array; a Mooncake file at the request's line.

So a replay's memory follows the sessions in flight, not the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from agentx.apis import Api
from agentx.apis.bodies import exchange_meta
from agentx.core.errors import FormatError
from agentx.core.models import Exchange, ExchangeMeta
from agentx.formats import resolve_trace
from agentx.prefixcache.hashing import common_prefix

if TYPE_CHECKING:
    from agentx.formats.lazy import HFRow, WekaSession
    from agentx.store.rowids import RowIds
    from agentx.store.select import TraceIndex


@dataclass(frozen=True, slots=True)
class SessionIndex:
    """One session of a trace as metadata: every row (replayable or not) in trace order."""

    session_id: str
    exchanges: tuple[ExchangeMeta, ...]
    unit: int = 0  # the source's handle on where the session lives (e.g. a file's position)


class SessionLoader(Protocol):
    def exchange(self, meta: ExchangeMeta) -> Exchange:
        """The full exchange of one row of the session (raises ``AgentxError`` if unreadable)."""
        ...


@runtime_checkable
class TraceSource(Protocol):
    """A trace a replay reads in two passes: metadata, then sessions on demand."""

    @property
    def candidates(self) -> int | None:
        """How many sessions there are, when known without reading any (else ``None``)."""
        ...

    @property
    def apis(self) -> frozenset[str] | None:
        """The API families of its rows, when known without reading them (else ``None``)."""
        ...

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        """Sessions in trace order; with ``selection`` (only when :attr:`candidates` is known),
        just those positions."""
        ...

    def load_session(self, session: SessionIndex) -> SessionLoader:
        """A loader for the rows of ``session``."""
        ...


@runtime_checkable
class Reindexable(Protocol):
    """A source that indexes a session of :meth:`TraceSource.index` again from its ``unit``
    (cheaply: from columns it holds), so a plan keeps only what it needs to find it."""

    def reindex(self, unit: int) -> SessionIndex: ...


# -- in memory ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ListLoader:
    exchanges: Sequence[Exchange]

    def exchange(self, meta: ExchangeMeta) -> Exchange:
        return self.exchanges[meta.locator]


class MemorySource:
    """Exchanges already in memory (tests, small traces)."""

    candidates = None
    apis = None

    def __init__(self, exchanges: Iterable[Exchange]) -> None:
        self._exchanges = list(exchanges)

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        return _grouped(exchange_meta(ex, i) for i, ex in enumerate(self._exchanges))

    def load_session(self, session: SessionIndex) -> SessionLoader:
        return _ListLoader(self._exchanges)


def _grouped(metas: Iterable[ExchangeMeta]) -> Iterator[SessionIndex]:
    by_session: dict[str, list[ExchangeMeta]] = {}
    for m in metas:
        by_session.setdefault(m.session_id, []).append(m)
    for sid, rows in by_session.items():
        yield SessionIndex(sid, tuple(rows))


# -- agentx Parquet traces ------------------------------------------------------------------------


Ids = tuple[int, ...]


class CompactRows:
    """A session's decoded rows, by locator, a hash-only row's block ids held as what they add
    to the previous hash row of its thread (a turn repeats its predecessor's ids and appends a
    few): the full ids of every row of the sessions in flight cost ~8 bytes an id a row (tens of
    MB on 64 lanes), these ~8 bytes a new id. A row's ids are rebuilt when it is asked for, from
    its thread's row asked for last (a thread's turns are sent in order), else along its chain.
    """

    __slots__ = ("_chains", "_last", "_rows")

    def __init__(self, rows: dict[int, Exchange]) -> None:
        self._rows: dict[int, Exchange] = {}
        # locator -> (the locator it extends, or None; ids kept of it; ids added)
        self._chains: dict[int, tuple[int | None, int, Ids]] = {}
        self._last: dict[str, tuple[int, Ids]] = {}  # thread -> (locator, ids) rebuilt last
        prev: dict[str, tuple[int, Ids]] = {}
        for loc in sorted(rows):
            ex = rows[loc]
            ids = ex.hash_ids
            if ids is None:
                self._rows[loc] = ex
                continue
            before = prev.get(ex.thread_id)
            n = common_prefix(before[1], ids) if before is not None else 0
            self._chains[loc] = (before[0], n, ids[n:]) if before and n else (None, 0, ids)
            prev[ex.thread_id] = (loc, ids)
            self._rows[loc] = replace(ex, hash_ids=None)

    def __len__(self) -> int:
        return len(self._rows)

    def has(self, locator: int) -> bool:
        return locator in self._rows

    def forget(self, locator: int) -> None:
        """Drop a row (its ids' delta is kept: a later row of its thread may be rebuilt along
        it)."""
        self._rows.pop(locator, None)

    def get(self, locator: int) -> Exchange:
        ex = self._rows[locator]
        if locator not in self._chains:
            return ex
        ids = self._ids(locator, ex.thread_id)
        self._last[ex.thread_id] = (locator, ids)
        return replace(ex, hash_ids=ids)

    def _ids(self, locator: int, thread: str) -> Ids:
        last = self._last.get(thread)
        path: list[int] = []  # the rows to rebuild, the asked one first
        at: int | None = locator
        while at is not None and not (last is not None and last[0] == at):
            path.append(at)
            at = self._chains[at][0]
        ids: Ids = last[1] if at is not None and last is not None else ()
        for loc in reversed(path):
            _, n, added = self._chains[loc]
            ids = ids[:n] + added if n else added
        return ids


@runtime_checkable
class RowIdsSource(Protocol):
    """A source that gives a session's hash-only rows' block ids as stored (a row's base row,
    the base's ids it keeps, the ids it adds) without decoding the rows."""

    def session_ids(self, session: SessionIndex) -> dict[int, RowIds]:
        """By locator: the stored ids of the session's rows and of the rows they extend (a
        base is a locator too, ``-1`` for none)."""
        ...


@runtime_checkable
class Forgetting(Protocol):
    """A loader that can drop a row its caller will not ask for again (a thread's turn once
    the next one is sent): a session's rows are held from its start to its end otherwise."""

    def forget(self, meta: ExchangeMeta) -> None: ...


class _RowsLoader:
    """A session's decoded rows; a row forgotten and asked for again (not expected) is read
    again with the whole session."""

    __slots__ = ("_reload", "rows")

    def __init__(self, rows: CompactRows, reload: Callable[[], CompactRows]) -> None:
        self.rows = rows
        self._reload = reload

    def exchange(self, meta: ExchangeMeta) -> Exchange:
        if not self.rows.has(meta.locator):
            self.rows = self._reload()
        return self.rows.get(meta.locator)

    def forget(self, meta: ExchangeMeta) -> None:
        self.rows.forget(meta.locator)


FILE_ROWS = 1 << 40  # a dataset file's rows are located at k * FILE_ROWS + row


class ParquetSource:
    """An agentx trace (a file, or a dataset directory of files): metadata columns first, a
    session's rows when it starts. A dataset whose files hold one session each (known from
    their footers, e.g. imported from a Weka directory) is indexed file by file when its
    sessions are wanted (:attr:`candidates`); otherwise every file's index is read first."""

    apis = None

    def __init__(self, path: Path) -> None:
        from agentx.store.select import GroupCache, dataset_files, sessions_per_file_known

        self._files = dataset_files(path)
        self._per_file = len(self._files) > 1 and sessions_per_file_known(self._files)
        self._indexes: dict[int, TraceIndex] = {}
        self._groups = GroupCache()
        self._sessions: (
            list[tuple[str | None, tuple[tuple[int, npt.NDArray[np.int64]], ...]]] | None
        ) = None

    @property
    def candidates(self) -> int | None:
        return len(self._files) if self._per_file else None

    def _file(self, k: int) -> TraceIndex:
        from agentx.store.select import read_index

        found = self._indexes.get(k)
        if found is None:
            found = self._indexes[k] = read_index(self._files[k], k * FILE_ROWS)
        return found

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        if not self._per_file:
            for unit in range(len(self._grouped())):
                yield self.reindex(unit)
            return
        for k in selection if selection is not None else range(len(self._files)):
            metas = tuple(self._file(k).rows)
            if metas:
                yield SessionIndex(metas[0].session_id, metas, k)

    def _grouped(self) -> list[tuple[str | None, tuple[tuple[int, npt.NDArray[np.int64]], ...]]]:
        """Each session (in the order of its first row) as its id and rows: (file, row numbers
        in file order) for each file it has rows in."""
        if self._sessions is None:
            by_session: dict[str | None, list[tuple[int, npt.NDArray[np.int64]]]] = {}
            for k in range(len(self._files)):
                codes, ids = self._file(k).rows.session_codes()
                order = np.argsort(codes, kind="stable")  # rows by session, in file order
                keys, firsts, counts = np.unique(codes, return_index=True, return_counts=True)
                ends = np.cumsum(counts)
                for j in np.argsort(firsts, kind="stable").tolist():
                    sid = None if keys[j] < 0 else ids[int(keys[j])]
                    rows = order[ends[j] - counts[j] : ends[j]].astype(np.int64)
                    by_session.setdefault(sid, []).append((k, rows))
            self._sessions = [(sid, tuple(parts)) for sid, parts in by_session.items()]
        return self._sessions

    def reindex(self, unit: int) -> SessionIndex:
        """Session ``unit`` of :meth:`index` (a trace not indexed file by file) again: its rows'
        metadata are built anew from the files' indexes, so a plan need not hold them for
        every session of the run."""
        _, parts = self._grouped()[unit]
        rows = tuple(self._file(k).rows[int(r)] for k, found in parts for r in found)
        return SessionIndex(rows[0].session_id, rows, unit)

    def load_session(self, session: SessionIndex) -> SessionLoader:
        return _RowsLoader(self._rows_of(session), lambda: self._rows_of(session))

    def _rows_of(self, session: SessionIndex) -> CompactRows:
        by_file: dict[int, list[int]] = {}
        for m in session.exchanges:
            by_file.setdefault(m.locator // FILE_ROWS, []).append(m.locator)
        rows: dict[int, Exchange] = {}
        for k, locators in by_file.items():
            index = self._file(k)
            found = index.read_rows([loc - k * FILE_ROWS for loc in locators], self._groups)
            rows.update(zip(locators, found, strict=True))
        return CompactRows(rows)

    def session_ids(self, session: SessionIndex) -> dict[int, RowIds]:
        from agentx.store.rowids import RowIds, read_row_ids

        by_file: dict[int, list[int]] = {}
        for m in session.exchanges:
            by_file.setdefault(m.locator // FILE_ROWS, []).append(m.locator)
        out: dict[int, RowIds] = {}
        for k, locators in by_file.items():
            at = k * FILE_ROWS
            found = read_row_ids(self._file(k), [loc - at for loc in locators], self._groups)
            for r, ids in found.items():
                base = ids.base + at if ids.base >= 0 else -1
                out[r + at] = RowIds(base, ids.base_len, ids.delta, ids.block_size)
        return out


# -- Weka and Mooncake (hash-only) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _WekaLoader:
    session: WekaSession

    def exchange(self, meta: ExchangeMeta) -> Exchange:
        from agentx.formats.lazy import read_weka_ids, with_ids

        ids = read_weka_ids(self.session, meta)
        return with_ids(meta, ids, self.session.block_size)


class WekaSource:
    """A Weka file or directory: one session per file, indexed without parsing block ids
    (``flat_chains``: its flat parallel agents split into threads,
    :func:`agentx.formats.weka.parse_weka`)."""

    apis = frozenset({Api.OPENAI_CHAT})

    def __init__(self, path: Path, *, flat_chains: bool = True) -> None:
        from agentx.formats.weka import weka_files

        self._files = weka_files(path)
        self._opened: dict[int, WekaSession] = {}
        self._flat = flat_chains

    @property
    def candidates(self) -> int:
        return len(self._files)

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        from agentx.formats.lazy import index_weka_file

        for k in selection if selection is not None else range(len(self._files)):
            ws = self._opened[k] = index_weka_file(self._files[k], k, flat_chains=self._flat)
            yield SessionIndex(ws.id, ws.exchanges, k)

    def load_session(self, session: SessionIndex) -> SessionLoader:
        return _WekaLoader(self._opened[session.unit])


class HFSource:
    """A Hugging Face dataset of Weka traces in ``.jsonl`` (a file, a directory, ``hf://``): one
    session per row, as :class:`WekaSource` has one per file. A scan for newlines counts the rows
    (:attr:`candidates`) without parsing any, so ``--sessions N`` samples rows, and a row is
    indexed (its block ids cut out) when a lane first needs it; a request's ids are read back
    from its line's span. As for a Weka directory, a bad row, or one repeating the id of a row
    indexed before it, is found when it is reached."""

    apis = frozenset({Api.OPENAI_CHAT})

    def __init__(self, files: Sequence[Path], *, flat_chains: bool = True) -> None:
        self._files = list(files)
        self._found: list[HFRow] | None = None
        self._rows: dict[int, WekaSession] = {}
        self._ids: dict[str, int] = {}
        self._flat = flat_chains

    def _all(self) -> list[HFRow]:
        if self._found is None:
            from agentx.formats.lazy import hf_rows

            self._found = hf_rows(self._files)
        return self._found

    @property
    def candidates(self) -> int:
        return len(self._all())

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        from agentx.formats.lazy import index_hf_row

        rows = self._all()
        for k in selection if selection is not None else range(len(rows)):
            ws = self._rows.get(k) or index_hf_row(rows[k], k, flat_chains=self._flat)
            if self._ids.setdefault(ws.id, k) != k:
                raise FormatError(ws.where, f"duplicate trace id {ws.id!r}")
            self._rows[k] = ws
            if ws.exchanges:  # a row without requests is no session (as read whole)
                yield SessionIndex(ws.id, ws.exchanges, k)

    def load_session(self, session: SessionIndex) -> SessionLoader:
        return _WekaLoader(self._rows[session.unit])


@dataclass(frozen=True, slots=True)
class _MooncakeLoader:
    path: Path

    def exchange(self, meta: ExchangeMeta) -> Exchange:
        from agentx.formats.lazy import read_mooncake

        return read_mooncake(self.path, meta)


class MooncakeSource:
    """A Mooncake JSONL file: one pass for metadata and line offsets."""

    candidates = None
    apis = frozenset({Api.OPENAI_CHAT})

    def __init__(self, path: Path) -> None:
        self._path = path

    def index(self, selection: Sequence[int] | None = None) -> Iterator[SessionIndex]:
        from agentx.formats.lazy import index_mooncake

        return _grouped(index_mooncake(self._path))

    def load_session(self, session: SessionIndex) -> SessionLoader:
        return _MooncakeLoader(self._path)


def _hf_source(path: Path, *, flat_chains: bool = True) -> TraceSource:
    """A Hugging Face dataset of Weka traces: its ``.jsonl`` rows indexed (:class:`HFSource`);
    Parquet rows are read whole (as ``agentx convert`` reads them: a row's ids sit in a JSON
    text or struct column, not at a byte span)."""
    from agentx.formats.hf import exchanges_of, resolve

    files = resolve(path)
    if any(f.suffix == ".parquet" for f in files):
        return MemorySource(exchanges_of(files, flat_chains=flat_chains))
    return HFSource(files, flat_chains=flat_chains)


def _weka_source(path: Path, *, flat_chains: bool = True) -> TraceSource:
    return WekaSource(path, flat_chains=flat_chains)


def _plain(make: Callable[[Path], TraceSource]) -> Callable[..., TraceSource]:
    """A source of a format with no flat agents to split."""

    def source(path: Path, *, flat_chains: bool = True) -> TraceSource:
        return make(path)

    return source


SOURCES: dict[str, Callable[..., TraceSource]] = {
    "agentx": _plain(ParquetSource),
    "weka": _weka_source,
    "mooncake": _plain(MooncakeSource),
    "hf": _hf_source,
}


def open_source(path: str | os.PathLike[str], *, flat_chains: bool = True) -> TraceSource:
    """The source of any trace agentx reads (format detected from the content; an ``hf://``
    dataset downloaded first: :func:`agentx.formats.resolve_trace`); ``flat_chains``: split Weka
    traces' flat parallel agents into threads (:func:`agentx.formats.weka.parse_weka`; a
    converted agentx trace keeps the threads it was converted with)."""
    fmt, local = resolve_trace(path)
    return SOURCES[fmt](local, flat_chains=flat_chains)
