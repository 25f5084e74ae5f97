"""Reading traces: format check, automatic recovery from a spool, streaming decode.

A trace is one Parquet file or a *dataset*: a directory of them, read in name order as one
trace (:func:`agentx.store.dataset.trace_files`). Every reader streams row group by row group;
memory follows a row group plus the conversations and block-id lists still to be extended, not
the trace. Readers can *project*: read only some columns (``iter_records``, or ``columns=`` of
``iter_exchanges``), so a plan or a hit-rate count never touches the text, and only some
sessions (``sessions=``), using the row groups' statistics to skip the rest.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from agentx.core.errors import TraceError
from agentx.core.models import Exchange
from agentx.core.outputs import check_not_results
from agentx.core.progress import Progress
from agentx.store.codec import DeltaDecoder, Row
from agentx.store.dataset import trace_files
from agentx.store.schema import (
    COLUMNS,
    META_CREATED_AT,
    META_FORMAT,
    META_TRACE_ID,
    META_USER,
    META_VERSION,
    META_WRITER,
    READABLE_FORMATS,
    REQUIRED_COLUMNS,
    SCHEMA,
)
from agentx.store.spool import REPEATED_COLUMNS, spool_header, spool_path, try_lock
from agentx.store.writer import Compacted, compact

READ_BATCH_ROWS = 256
FORMAT_PREFIX = "agentx.trace/"
# what decoding a row needs besides the columns asked for
_DECODE_COLUMNS = ("request_id", "conversation_key", "conversation_base_id")
_HASH_DECODE = ("hash_ids", "hash_ids_base_id", "hash_ids_base_len", "hash_ids_delta")


@dataclass(frozen=True, slots=True)
class TraceInfo:
    path: Path
    format: str
    trace_id: str
    created_at: str
    metadata: dict[str, str]
    num_rows: int
    writer: str = ""
    version: str | None = None  # the agentx version that wrote it (None: not stamped)
    files: tuple[Path, ...] = ()  # the Parquet files, in reading order (one for a file trace)


def recover(
    path: str | os.PathLike[str], *, force: bool = False, progress: Progress | None = None
) -> int | None:
    """Rebuild ``path`` from the spool a dead writer left beside it.

    Returns the number of exchanges recovered, or ``None`` when there was no spool. Raises
    :class:`TraceError` if the spool's writer is still alive (it holds the spool's lock).
    ``force`` is accepted for compatibility; the lock, not a pid, decides.
    A dataset directory recovers each of its files that has a spool (``None`` if none had).
    ``progress`` advances in spool bytes.
    """
    report = recover_report(path, progress=progress)
    return None if report is None else report.rows


def recover_report(
    path: str | os.PathLike[str], *, progress: Progress | None = None
) -> Compacted | None:
    """:func:`recover`, saying also what it skipped: damaged spool lines, and the rows that
    extend them; a spool not fully recovered is kept as ``<trace>.spool.damaged``. A dataset
    directory sums what its files' recoveries did (the first spool kept is named)."""
    p = Path(path)
    if p.is_dir():
        found = [
            r
            for s in _spools(p)
            if (r := recover_report(s.with_name(s.name[: -len(".spool")]), progress=progress))
        ]
        if not found:
            return None
        kept = next((r.kept_spool for r in found if r.kept_spool is not None), None)
        return Compacted(
            rows=sum(r.rows for r in found),
            damaged=sum(r.damaged for r in found),
            orphaned=sum(r.orphaned for r in found),
            kept_spool=kept,
        )
    spool = spool_path(p)
    try:
        fh = open(spool, "rb")  # noqa: SIM115 - closed below, after the spool is gone
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TraceError(f"cannot read spool {spool}: {exc.strerror or exc}") from None
    with fh:
        if not try_lock(fh):
            pid = spool_header(spool).get("pid", "?")
            raise TraceError(
                f"{p} is still being written (pid {pid}); stop that writer or wait for it"
            )
        if not spool.exists():  # another process recovered it while we waited for the lock
            return None
        if progress is not None:
            progress.phase("recovering")
        return compact(spool, p, progress)


def _spools(directory: Path) -> list[Path]:
    return sorted(f for f in directory.glob("*.parquet.spool") if f.is_file())


@dataclass(frozen=True, slots=True)
class _FileInfo:
    info: TraceInfo
    columns: tuple[str, ...]  # the trace columns the file has (v1 files lack the v1.1 ones)


def _open_file(p: Path) -> _FileInfo:
    if spool_path(p).exists():
        recover(p)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    try:
        pf = pq.ParquetFile(p)
    except (pa.ArrowException, OSError) as exc:
        raise TraceError(f"{p}: not a readable Parquet trace ({_first_line(exc)})") from None
    meta = pf.schema_arrow.metadata or {}
    fmt = meta.get(META_FORMAT, b"").decode(errors="replace")
    if not fmt.startswith(FORMAT_PREFIX):
        raise TraceError(
            f"{p}: a Parquet file, but not an agentx trace (no {META_FORMAT.decode()} in its metadata)"
        )
    if fmt not in READABLE_FORMATS:
        raise TraceError(
            f"{p}: trace format {fmt!r} is not supported (this agentx reads "
            f"{', '.join(READABLE_FORMATS[:-1])} and {READABLE_FORMATS[-1]})"
        )
    required = REQUIRED_COLUMNS[fmt]
    names = set(pf.schema_arrow.names)
    missing = [c for c in required if c not in names]
    if missing:
        raise TraceError(f"{p}: corrupt trace (missing columns: {', '.join(missing)})")
    wrong = _wrong_type(pf.schema_arrow)
    if wrong:
        raise TraceError(f"{p}: corrupt trace ({wrong})")
    user = meta.get(META_USER)
    try:
        metadata = orjson.loads(user) if user else {}
    except orjson.JSONDecodeError:
        raise TraceError(f"{p}: corrupt trace (unreadable {META_USER.decode()})") from None
    info = TraceInfo(
        path=p,
        format=fmt,
        trace_id=meta.get(META_TRACE_ID, b"").decode(errors="replace"),
        created_at=meta.get(META_CREATED_AT, b"").decode(errors="replace"),
        metadata=metadata if isinstance(metadata, dict) else {},
        num_rows=pf.metadata.num_rows,
        writer=meta.get(META_WRITER, b"").decode(errors="replace"),
        version=meta[META_VERSION].decode(errors="replace") if META_VERSION in meta else None,
        files=(p,),
    )
    return _FileInfo(info, tuple(c for c in COLUMNS if c in names))


def _kind(t: pa.DataType) -> str:
    """What a column's values are, as far as decoding a row cares (an int32 where the schema
    says int64, a large or dictionary-encoded string, read the same)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list of {_kind(t.value_type)}"
    if pa.types.is_null(t):
        return "null"  # a column with no value at all reads as nulls whatever it should hold
    return str(t)


def _wrong_type(schema: pa.Schema) -> str | None:
    """The first column whose values are not what the trace format says, as words."""
    for field in schema:
        if field.name not in SCHEMA.names:
            continue
        want, got = _kind(SCHEMA.field(field.name).type), _kind(field.type)
        if got not in (want, "null") and not (want == "number" and got == "integer"):
            return f"column {field.name} holds {field.type} values, not {want}"
    return None


def open_trace(path: str | os.PathLike[str]) -> TraceInfo:
    """Check that ``path`` is an agentx trace (a file, or a dataset directory of them) of a
    known version, recovering files whose writer died. A dataset's info is its first file's,
    with ``num_rows`` and ``files`` covering all of them."""
    p = Path(path)
    check_not_results(p)
    if p.is_dir():
        recover(p)
    files = [_open_file(f) for f in trace_files(p)]
    first = files[0].info
    if len(files) == 1 and not p.is_dir():
        return first
    return TraceInfo(
        path=p,
        format=max(f.info.format for f in files),
        trace_id=first.trace_id,
        created_at=first.created_at,
        metadata=first.metadata,
        num_rows=sum(f.info.num_rows for f in files),
        writer=first.writer,
        version=first.version,
        files=tuple(f.info.path for f in files),
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def iter_exchanges(
    path: str | os.PathLike[str],
    *,
    shared: bool = False,
    columns: Collection[str] | None = None,
    sessions: Collection[str] | None = None,
    progress: Progress | None = None,
) -> Iterator[Exchange]:
    """Every exchange in file order, with full request bodies and block ids rebuilt.

    The trace is checked (and recovered) when this is called, not on the first ``next``.
    Memory stays bounded by the conversations still to be extended, not by the trace.
    ``shared=True`` skips copying conversation items that a row shares with earlier rows: much
    faster on long sessions, but the bodies share objects and must be treated as read-only.
    ``columns`` reads only those columns (the others come back empty: ``None``, ``()``);
    ``sessions`` only the rows of those sessions. ``progress`` is advanced in rows.
    """
    info = open_trace(path)
    wanted = set(COLUMNS if columns is None else columns)
    _check_columns(wanted)
    return _iter(info, shared, wanted, sessions, progress or Progress())


def iter_records(
    path: str | os.PathLike[str],
    columns: Collection[str],
    *,
    sessions: Collection[str] | None = None,
    progress: Progress | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows as plain dicts of the ``columns`` asked for (values as stored: JSON columns are
    text), in file order, reading nothing else. ``"hash_ids"`` is a row's *full* block-id
    tuple, rebuilt from the delta columns (so it costs those columns, not the text).
    ``sessions`` keeps only those sessions' rows."""
    info = open_trace(path)
    wanted = list(dict.fromkeys(columns))
    _check_columns(set(wanted))
    return _iter_records(info, wanted, sessions, progress or Progress())


def _check_columns(wanted: set[str]) -> None:
    unknown = wanted - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown trace columns: {', '.join(sorted(unknown))}")


def _iter_records(
    info: TraceInfo, wanted: list[str], sessions: Collection[str] | None, progress: Progress
) -> Iterator[dict[str, Any]]:
    expand = "hash_ids" in wanted
    read = set(wanted) | ({"request_id", *_HASH_DECODE} if expand else set())
    for f in info.files:
        for rows, hashes in _file_rows(f, read, sessions, progress, shared=False):
            try:
                for row in rows:
                    out = {c: row.get(c) for c in wanted}
                    if expand:
                        out["hash_ids"] = hashes.hash_ids(row)
                    yield out
            except (KeyError, ValueError, TypeError) as exc:
                raise TraceError(f"{f}: corrupt trace ({_first_line(exc)})") from None


def _iter(
    info: TraceInfo,
    shared: bool,
    wanted: set[str],
    sessions: Collection[str] | None,
    progress: Progress,
) -> Iterator[Exchange]:
    read = wanted | set(_DECODE_COLUMNS) | (set(_HASH_DECODE) if "hash_ids" in wanted else set())
    needs_api = "api" in wanted
    for f in info.files:
        for rows, decoder in _file_rows(f, read, sessions, progress, shared=shared):
            try:
                for row in rows:
                    if needs_api and not isinstance(row["api"], str):
                        # every reader branches on a row's API: a row without one is void
                        raise ValueError(f"request {row['request_id']} has no api")
                    yield decoder.decode(row)
            except (KeyError, ValueError, TypeError) as exc:
                raise TraceError(f"{f}: corrupt trace ({_first_line(exc)})") from None


def _file_rows(
    path: Path,
    read: set[str],
    sessions: Collection[str] | None,
    progress: Progress,
    *,
    shared: bool,
) -> Iterator[tuple[Iterable[Row], DeltaDecoder]]:
    """(rows, the decoder that rebuilds them) for one file, a slice at a time."""
    try:
        fi = _open_file(path)
        present = [c for c in fi.columns if c in read]
        pf = pq.ParquetFile(path, read_dictionary=[c for c in REPEATED_COLUMNS if c in present])
        nulls = {c: None for c in COLUMNS if c not in present}
        groups = list(range(pf.num_row_groups))
        keep = None if sessions is None else frozenset(sessions)
        if keep is not None:
            if "session_id" not in present:
                present.append("session_id")
                nulls.pop("session_id", None)
            candidates = [g for g in groups if _may_hold(pf, g, keep)]
            selected = _selected_rows(pf, candidates, present, nulls, keep)
            if selected is not None:
                progress.advance(len(selected))
                yield selected, _decoder(selected, shared)
                return
        bases = [c for c in ("conversation_base_id", "hash_ids_base_id") if c in present]
        decoder = _decoder_for_file(pf, bases, shared)
        for g in groups:
            table = pf.read_row_group(g, columns=present)
            for batch in table.to_batches(max_chunksize=READ_BATCH_ROWS):
                rows = [r | nulls for r in batch.to_pylist()] if nulls else batch.to_pylist()
                if keep is not None:
                    rows = [r for r in rows if r["session_id"] in keep]
                yield rows, decoder
                progress.advance(batch.num_rows)
            del table
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"{path}: corrupt trace ({_first_line(exc)})") from None


def _decoder_for_file(pf: pq.ParquetFile, bases: Sequence[str], shared: bool) -> DeltaDecoder:
    """A decoder primed with how often each row is a base (read from the base-id columns)."""
    refs: dict[str, Counter[str]] = {c: Counter() for c in bases}
    if bases:
        table = pf.read(columns=bases)
        for c in bases:
            refs[c].update(b for b in table.column(c).to_pylist() if b is not None)
    return DeltaDecoder(
        dict(refs.get("conversation_base_id", {})),
        shared=shared,
        hash_refcounts=dict(refs.get("hash_ids_base_id", {})),
    )


def _decoder(rows: list[Row], shared: bool) -> DeltaDecoder:
    conv = Counter(r["conversation_base_id"] for r in rows if r.get("conversation_base_id"))
    hashes = Counter(r["hash_ids_base_id"] for r in rows if r.get("hash_ids_base_id"))
    return DeltaDecoder(dict(conv), shared=shared, hash_refcounts=dict(hashes))


def _may_hold(pf: pq.ParquetFile, group: int, sessions: frozenset[str]) -> bool:
    """False when the row group's min/max statistics of ``session_id`` exclude every session."""
    rg = pf.metadata.row_group(group)
    col = pf.schema_arrow.get_field_index("session_id")
    stats = rg.column(col).statistics
    if stats is None or not stats.has_min_max:
        return True
    lo, hi = stats.min, stats.max
    return any(lo <= s <= hi for s in sessions)


def _selected_rows(
    pf: pq.ParquetFile,
    groups: list[int],
    present: list[str],
    nulls: dict[str, None],
    keep: frozenset[str],
) -> list[Row] | None:
    """The rows of the sessions kept, when every base they extend is among them (the usual
    case: bases are the parent or the previous row of a thread); ``None`` otherwise, and the
    caller decodes the whole file."""
    rows: list[Row] = []
    for g in groups:
        table = pf.read_row_group(g, columns=present)
        mask = pc.is_in(table.column("session_id"), value_set=pa.array(sorted(keep)))
        picked = table.filter(mask).to_pylist()
        rows.extend(r | nulls for r in picked) if nulls else rows.extend(picked)
    ids = {r["request_id"] for r in rows}
    for r in rows:
        for col in ("conversation_base_id", "hash_ids_base_id"):
            base = r.get(col)
            if base is not None and base not in ids:
                return None
    return rows


def read_trace(path: str | os.PathLike[str]) -> list[Exchange]:
    return list(iter_exchanges(path))
