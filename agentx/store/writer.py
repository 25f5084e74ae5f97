"""TraceWriter: append exchanges to a write-ahead spool, compact to Parquet (zstd) on close.

Each ``append`` writes one JSON line to ``<trace>.spool`` and flushes it to the OS before it
returns, so a writer killed with SIGKILL loses at most the exchange in flight. ``amend`` adds
flags to a row already spooled (one more line, applied at compaction): capture learns that a
call was a side call only after writing it. The next
``open``/``read`` of the trace (or ``agentx recover``) rebuilds the Parquet file from the spool.
The writer holds an exclusive ``flock`` on its spool for its whole life: the kernel drops it when
the process dies, however it dies, which is how a reader tells a live writer from a dead one.
Compaction streams the spool in row groups, so memory stays bounded for any trace size.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx import DISTRIBUTION, __version__
from agentx.core.errors import TraceError
from agentx.core.lifecycle import Committing
from agentx.core.models import Exchange
from agentx.core.outputs import atomic_output
from agentx.core.progress import Progress
from agentx.store.codec import DeltaEncoder, Row
from agentx.store.schema import (
    FORMAT,
    ID_LIST_COLUMNS,
    META_CREATED_AT,
    META_FORMAT,
    META_TRACE_ID,
    META_USER,
    META_VERSION,
    META_WRITER,
    SCHEMA,
)
from agentx.store.spool import (
    AMEND,
    SPOOL_MAGIC,
    SpoolTexts,
    read_spool,
    row_line,
    spool_header,
    spool_path,
    try_lock,
)

ROW_GROUP_ROWS = 1024  # rows repeat ~tens of KB of tools/system text: keep batches small


class TraceWriter(Committing):
    """Writes one trace file. Use as a context manager, or call :meth:`close`.

    ``append`` returns once the exchange is in the spool (flushed to the OS, so it survives the
    process being killed; ``fsync=True`` also survives a power cut, at a cost per exchange).
    ``created_at`` (ISO-8601) defaults to now; pass it to make a file byte-reproducible.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        trace_id: str | None = None,
        metadata: dict[str, str] | None = None,
        fsync: bool = False,
        created_at: str | None = None,
        shown: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = Path(path)
        # the name errors give: the user's output, when ``path`` is a temporary file beside it
        self.shown = Path(shown) if shown is not None else self.path
        self.trace_id = trace_id or uuid.uuid4().hex
        self._fsync = fsync
        self._encoder = DeltaEncoder()
        self._texts = SpoolTexts()
        self._spool_path = spool_path(self.path)
        self.count = 0
        header = {
            "spool": SPOOL_MAGIC,
            "format": FORMAT,
            "trace_id": self.trace_id,
            "created_at": created_at or datetime.now(UTC).isoformat(),
            "metadata": metadata or {},
            "writer": f"{DISTRIBUTION} {__version__}",
            "version": __version__,
            "pid": os.getpid(),
        }
        if self._spool_path.exists():
            _refuse_existing_spool(self.path, self._spool_path)
        # Create under a private name, lock, then rename into place: nobody ever sees an
        # unlocked spool of a live writer.
        tmp = self._spool_path.with_name(
            f".{self._spool_path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._spool: IO[bytes] = open(tmp, "xb")  # noqa: SIM115 - lives as long as the writer
            try_lock(self._spool)
            self._spool.write(orjson.dumps(header) + b"\n")
            self._spool.flush()
            os.replace(tmp, self._spool_path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise TraceError(f"cannot write trace {self.shown}: {exc.strerror or exc}") from None

    def append(self, ex: Exchange) -> None:
        """Spool one exchange durably (flushed to the OS; fsynced too when asked)."""
        if self._spool.closed:
            raise TraceError(f"{self.path}: append after close")
        if not ex.trace_id:
            ex = replace(ex, trace_id=self.trace_id)
        try:
            row = self._encoder.encode(ex)
        except TypeError as exc:
            raise TraceError(f"exchange {ex.request_id}: not JSON-serialisable ({exc})") from None
        self._write_line(row_line(self._texts.pack(row)))
        self.count += 1

    def amend(self, request_id: str, flags: tuple[str, ...]) -> None:
        """Add ``flags`` to the row of ``request_id``, already appended (durable like append)."""
        if self._spool.closed:
            raise TraceError(f"{self.path}: amend after close")
        self._write_line(orjson.dumps({AMEND: request_id, "flags": list(flags)}) + b"\n")

    def _write_line(self, line: bytes) -> None:
        try:
            self._spool.write(line)  # one write of one whole line: a kill tears at most this line
            self._spool.flush()
            if self._fsync:
                os.fsync(self._spool.fileno())
        except OSError as exc:
            # a capture's spool is the user's to know of; a whole-written trace's is hidden
            what = f"spool {self._spool_path}" if self.shown == self.path else str(self.shown)
            raise TraceError(f"cannot write trace {what}: {exc.strerror or exc}") from None

    def close(self) -> None:
        """Compact the spool into the Parquet trace and remove the spool (idempotent)."""
        if self._spool.closed:
            return
        try:
            self._spool.flush()
            compact(self._spool_path, self.path, shown=self.shown)
        finally:
            self._spool.close()  # releases the lock only after the spool is gone

    def abort(self) -> None:
        """Stop without compacting: ``path`` is left as it was, the spool stays for
        ``agentx recover`` (what a kill would leave, minus the torn line)."""
        if not self._spool.closed:
            with contextlib.suppress(OSError):
                self._spool.flush()
            self._spool.close()


def _refuse_existing_spool(path: Path, spool: Path) -> None:
    header = spool_header(spool)
    try:
        fh = open(spool, "rb")  # noqa: SIM115
    except OSError:
        return  # vanished meanwhile: fine
    with fh:
        if not try_lock(fh):
            raise TraceError(
                f"{path} is being written by another writer (pid {header.get('pid', '?')})"
            )
    raise TraceError(
        f"{path}: a writer died leaving {spool.name}; run `agentx recover {path}` first "
        "(or delete the spool to discard it)"
    )


@dataclass(frozen=True, slots=True)
class Compacted:
    """What :func:`compact` did."""

    rows: int  # exchanges written to the trace
    damaged: int = 0  # spool lines skipped: not a row
    orphaned: int = 0  # rows skipped: they extend a damaged one
    kept_spool: Path | None = None  # the spool, renamed, when it was not fully recovered


def compact(
    spool: Path, path: Path, progress: Progress | None = None, *, shown: Path | None = None
) -> Compacted:
    """Turn a spool into the Parquet trace (atomically replacing ``path``). The spool is then
    removed, or, when some of it could not be read, kept as ``<spool>.damaged``: never lost,
    and no longer in the way of readers and writers of ``path``. ``progress`` advances in
    spool bytes. ``shown`` is the name errors give (the user's output ``path`` stands for).

    The caller holds the spool's lock (a live writer, or :func:`recover`)."""
    with open(spool, "rb") as fh:
        if progress is not None:
            progress.phase(None, total=os.fstat(fh.fileno()).st_size, unit="B")
        header, read = read_spool(fh, spool, progress)
        meta = {
            META_FORMAT: FORMAT.encode(),
            META_TRACE_ID: str(header.get("trace_id", "")).encode(),
            META_CREATED_AT: str(header.get("created_at", "")).encode(),
            META_WRITER: str(header.get("writer", "")).encode(),
            META_USER: orjson.dumps(header.get("metadata") or {}),
        }
        if header.get("version"):  # spools written before the version stamp have none
            meta[META_VERSION] = str(header["version"]).encode()
        n = _write_rows(path, read.rows, meta, shown or path)
    if not read.damaged and not read.orphaned:
        spool.unlink()
        return Compacted(n)
    kept = _free_name(spool.with_name(spool.name + ".damaged"))
    os.replace(spool, kept)
    return Compacted(n, read.damaged, read.orphaned, kept)


def _free_name(path: Path) -> Path:
    candidate, i = path, 1
    while candidate.exists():
        i += 1
        candidate = path.with_name(f"{path.name}.{i}")
    return candidate


def _write_rows(path: Path, rows: Iterable[Row], meta: dict[bytes, bytes], shown: Path) -> int:
    schema = SCHEMA.with_metadata(meta)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    n = 0
    try:
        with parquet_writer(tmp, schema) as pw:
            batch: list[Row] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= ROW_GROUP_ROWS:
                    pw.write_table(pa.Table.from_pylist(batch, schema=schema))
                    n += len(batch)
                    batch = []
            if batch or n == 0:
                pw.write_table(pa.Table.from_pylist(batch, schema=schema))
                n += len(batch)
        os.replace(tmp, path)
    except (OSError, pa.ArrowException) as exc:
        tmp.unlink(missing_ok=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TraceError(f"cannot write trace {shown}: {reason}") from None
    return n


@contextlib.contextmanager
def new_trace(
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    trace_id: str | None = None,
    metadata: dict[str, str] | None = None,
    created_at: str | None = None,
) -> Iterator[TraceWriter]:
    """A trace written whole (scrub, anonymize, convert): into a temporary file beside ``path``
    (:func:`agentx.core.outputs.atomic_output`) that replaces ``path`` only once it is complete. An
    existing ``path`` is refused unless ``force``; so is one with a dead capture's spool beside
    it (reading ``path`` would recover that spool over it)."""
    p = Path(path)
    if spool_path(p).exists():
        raise TraceError(
            f"{p}: a capture that died left {spool_path(p).name}; run `agentx recover {p}` "
            "first (or delete the spool to discard it)"
        )
    with (
        atomic_output(p, force=force) as tmp,
        TraceWriter(tmp, trace_id=trace_id, metadata=metadata, created_at=created_at, shown=p) as w,
    ):
        yield w


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """The Parquet writer of trace files: zstd, dictionary-encoded text, block ids
    delta-encoded (DELTA_BINARY_PACKED: consecutive ids cost a few bits each)."""
    return pq.ParquetWriter(
        path,
        schema,
        compression="zstd",
        compression_level=9,
        use_dictionary=[c for c in schema.names if c not in ID_LIST_COLUMNS],
        column_encoding={c: "DELTA_BINARY_PACKED" for c in ID_LIST_COLUMNS},
    )


def write_trace(
    path: str | os.PathLike[str],
    exchanges: Iterable[Exchange],
    *,
    trace_id: str | None = None,
    metadata: dict[str, str] | None = None,
    created_at: str | None = None,
    force: bool = True,
) -> int:
    """Write a whole trace (atomically; replacing ``path`` unless ``force=False``); returns
    the number of exchanges written."""
    with new_trace(
        path, force=force, trace_id=trace_id, metadata=metadata, created_at=created_at
    ) as w:
        for ex in exchanges:
            w.append(ex)
    return w.count
