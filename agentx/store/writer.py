"""TraceWriter: append exchanges to a write-ahead spool, compact to Parquet (zstd) on close.

Each ``append`` writes one JSON line to ``<trace>.spool`` and flushes it to the OS before it
returns, so a writer killed with SIGKILL loses at most the exchange in flight; the next
``open``/``read`` of the trace (or ``agentx recover``) rebuilds the Parquet file from the spool.
Compaction streams the spool in row groups, so memory stays bounded for any trace size.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.errors import TraceError
from agentx.models import Exchange
from agentx.store.codec import DeltaEncoder, Row
from agentx.store.schema import FORMAT, META_CREATED_AT, META_FORMAT, META_TRACE_ID, META_USER, SCHEMA

ROW_GROUP_ROWS = 4096


def spool_path(path: Path) -> Path:
    return path.with_name(path.name + ".spool")


class TraceWriter:
    """Writes one trace file. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        trace_id: str | None = None,
        metadata: dict[str, str] | None = None,
        fsync: bool = False,
    ) -> None:
        self.path = Path(path)
        self.trace_id = trace_id or uuid.uuid4().hex
        self._fsync = fsync
        self._encoder = DeltaEncoder()
        self._spool_path = spool_path(self.path)
        self.count = 0
        header = {
            "spool": FORMAT,
            "trace_id": self.trace_id,
            "created_at": datetime.now(UTC).isoformat(),
            "metadata": metadata or {},
            "pid": os.getpid(),
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._spool = open(self._spool_path, "wb")  # noqa: SIM115 - lives as long as the writer
            self._spool.write(orjson.dumps(header) + b"\n")
            self._spool.flush()
        except OSError as exc:
            raise TraceError(f"cannot write trace {self.path}: {exc.strerror or exc}") from None

    def append(self, ex: Exchange) -> None:
        """Spool one exchange durably (flushed to the OS; fsynced too when asked)."""
        if not ex.trace_id:
            ex = _with_trace_id(ex, self.trace_id)
        line = orjson.dumps(self._encoder.encode(ex)) + b"\n"
        try:
            self._spool.write(line)
            self._spool.flush()
            if self._fsync:
                os.fsync(self._spool.fileno())
        except OSError as exc:
            raise TraceError(f"cannot write trace spool {self._spool_path}: {exc.strerror or exc}") from None
        self.count += 1

    def close(self) -> None:
        if self._spool.closed:
            return
        self._spool.close()
        compact(self._spool_path, self.path)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _with_trace_id(ex: Exchange, trace_id: str) -> Exchange:
    from dataclasses import replace

    return replace(ex, trace_id=trace_id)


def read_spool(spool: Path) -> tuple[dict[str, Any], Iterator[Row]]:
    """The spool's header and its complete rows; a torn last line (killed writer) is skipped."""
    fh = open(spool, "rb")  # noqa: SIM115 - closed by the generator
    first = fh.readline()
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        fh.close()
        raise TraceError(f"{spool}: not an agentx spool (bad header)") from None

    def rows() -> Iterator[Row]:
        with fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    return  # torn write of the exchange in flight
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError:
                    return

    return header, rows()


def compact(spool: Path, path: Path) -> int:
    """Turn a spool into the Parquet trace (atomically), then remove the spool."""
    header, rows = read_spool(spool)
    meta = {
        META_FORMAT: FORMAT.encode(),
        META_TRACE_ID: str(header.get("trace_id", "")).encode(),
        META_CREATED_AT: str(header.get("created_at", "")).encode(),
        META_USER: orjson.dumps(header.get("metadata") or {}),
    }
    n = _write_rows(path, rows, meta)
    spool.unlink()
    return n


def _write_rows(path: Path, rows: Iterable[Row], meta: dict[bytes, bytes]) -> int:
    schema = SCHEMA.with_metadata(meta)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    n = 0
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd", compression_level=9) as pw:
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
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TraceError(f"cannot write trace {path}: {exc.strerror or exc}") from None
    return n


def write_trace(
    path: str | os.PathLike[str],
    exchanges: Iterable[Exchange],
    *,
    trace_id: str | None = None,
    metadata: dict[str, str] | None = None,
) -> int:
    """Write a whole trace; returns the number of exchanges written."""
    with TraceWriter(path, trace_id=trace_id, metadata=metadata) as w:
        for ex in exchanges:
            w.append(ex)
    return w.count
