"""Reading traces: format check, automatic recovery from a spool, streaming decode."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.errors import TraceError
from agentx.models import Exchange
from agentx.store.codec import DeltaDecoder
from agentx.store.schema import (
    COLUMNS,
    FORMAT,
    META_CREATED_AT,
    META_FORMAT,
    META_TRACE_ID,
    META_USER,
    META_VERSION,
    META_WRITER,
)
from agentx.store.writer import (
    REPEATED_COLUMNS,
    Compacted,
    compact,
    spool_header,
    spool_path,
    try_lock,
)

READ_BATCH_ROWS = 256
FORMAT_PREFIX = "agentx.trace/"


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


def recover(path: str | os.PathLike[str], *, force: bool = False) -> int | None:
    """Rebuild ``path`` from the spool a dead writer left beside it.

    Returns the number of exchanges recovered, or ``None`` when there was no spool. Raises
    :class:`TraceError` if the spool's writer is still alive (it holds the spool's lock).
    ``force`` is accepted for compatibility; the lock, not a pid, decides.
    """
    report = recover_report(path)
    return None if report is None else report.rows


def recover_report(path: str | os.PathLike[str]) -> Compacted | None:
    """:func:`recover`, saying also what it skipped: damaged spool lines, and the rows that
    extend them; a spool not fully recovered is kept as ``<trace>.spool.damaged``."""
    p = Path(path)
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
        return compact(spool, p)


def open_trace(path: str | os.PathLike[str]) -> TraceInfo:
    """Check that ``path`` is an agentx trace of a known version (recovering it if needed)."""
    p = Path(path)
    if spool_path(p).exists():
        recover(p)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    if p.is_dir():
        raise TraceError(f"{p}: is a directory, not a trace file")
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
    if fmt != FORMAT:
        raise TraceError(f"{p}: trace format {fmt!r} is not supported (this agentx reads {FORMAT})")
    missing = [c for c in COLUMNS if c not in pf.schema_arrow.names]
    if missing:
        raise TraceError(f"{p}: corrupt trace (missing columns: {', '.join(missing)})")
    user = meta.get(META_USER)
    try:
        metadata = orjson.loads(user) if user else {}
    except orjson.JSONDecodeError:
        raise TraceError(f"{p}: corrupt trace (unreadable {META_USER.decode()})") from None
    return TraceInfo(
        path=p,
        format=fmt,
        trace_id=meta.get(META_TRACE_ID, b"").decode(errors="replace"),
        created_at=meta.get(META_CREATED_AT, b"").decode(errors="replace"),
        metadata=metadata if isinstance(metadata, dict) else {},
        num_rows=pf.metadata.num_rows,
        writer=meta.get(META_WRITER, b"").decode(errors="replace"),
        version=meta[META_VERSION].decode(errors="replace") if META_VERSION in meta else None,
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def iter_exchanges(path: str | os.PathLike[str], *, shared: bool = False) -> Iterator[Exchange]:
    """Every exchange in file order, with full request bodies rebuilt.

    The file is checked (and recovered) when this is called, not on the first ``next``. Memory
    stays bounded by the conversations still to be extended, not by the trace.
    ``shared=True`` skips copying conversation items that a row shares with earlier rows: much
    faster on long sessions, but the bodies share objects and must be treated as read-only.
    """
    info = open_trace(path)
    return _iter(info, shared)


def _iter(info: TraceInfo, shared: bool) -> Iterator[Exchange]:
    try:
        pf = pq.ParquetFile(info.path, read_dictionary=list(REPEATED_COLUMNS))
        bases = pf.read(columns=["conversation_base_id"]).column(0).to_pylist()
        decoder = DeltaDecoder(dict(Counter(b for b in bases if b is not None)), shared=shared)
        # Row group by row group, small slices at a time, the repeated text columns kept
        # dictionary-encoded in Arrow: memory follows a slice, not the file (iter_batches'
        # read-ahead grew with the file).
        for i in range(pf.num_row_groups):
            table = pf.read_row_group(i, columns=list(COLUMNS))
            for batch in table.to_batches(max_chunksize=READ_BATCH_ROWS):
                for row in batch.to_pylist():
                    yield decoder.decode(row)
            del table
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"{info.path}: corrupt trace ({_first_line(exc)})") from None


def read_trace(path: str | os.PathLike[str]) -> list[Exchange]:
    return list(iter_exchanges(path))
