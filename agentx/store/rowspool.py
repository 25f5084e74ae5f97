"""The spool of a replay's rows: what each process measured, on disk as it finishes.

A replay process appends the row of every finished request (:class:`agentx.core.record.RequestRecord`)
to its own spool in the run's results directory (``DIR/.agentx-run/``: :mod:`agentx.replay.rundir`), :data:`BATCH_ROWS` rows at a time (or
whatever it holds once the oldest waited :data:`FLUSH_AFTER_S`), as an
Arrow IPC stream of ``requests.parquet``'s schema; so a long run holds no rows in memory, only
the few it has not written yet. A stream is readable while it is written (every complete batch),
and after a crash up to its last complete batch. At the end the run reads every process's spool
back in send order (:func:`read_spools`) to build ``requests.parquet`` and ``summary.json``;
``agentx recover`` does the same with a killed run's spools.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa

from agentx.core.progress import Progress
from agentx.core.record import RequestRecord
from agentx.store.results import SCHEMA, batch_of, records_of

BATCH_ROWS = 256  # rows written at a time
BATCH_GAPS = 1 << 18  # ... or sooner, once they hold this many inter-token gaps (2 MB)
# ... or sooner, once the oldest row not written has waited this long: a killed run loses at most
# the last second's rows, whatever the batch (the run's periodic tasks call flush_due)
FLUSH_AFTER_S = 1.0


class RowSpool:
    """Appends rows to ``path`` (created, or replaced). A write that fails (disk full) sets
    :attr:`error` and drops the rows from then on; the caller decides what the run does."""

    def __init__(self, path: Path, batch_rows: int | None = None) -> None:
        self.path = path
        self.batch_rows = batch_rows or BATCH_ROWS
        self.written = 0  # rows in the file
        self.error: str | None = None
        self._rows: list[RequestRecord] = []
        self._gaps = 0
        self._oldest_s = 0.0  # monotonic time the oldest row not written was added
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        try:
            self._sink = pa.OSFile(str(path), "wb")
            self._writer = pa.ipc.new_stream(self._sink, SCHEMA)
        except (OSError, pa.ArrowException) as exc:
            self._failed(exc)

    def add(self, row: RequestRecord) -> None:
        if self._writer is None:
            return
        if not self._rows:
            self._oldest_s = time.monotonic()
        self._rows.append(row)
        self._gaps += len(row.itl_ns)
        if len(self._rows) >= self.batch_rows or self._gaps >= BATCH_GAPS:
            self.flush()
        else:
            self.flush_due()

    def flush_due(self) -> None:
        """Write the rows not written yet when the oldest has waited :data:`FLUSH_AFTER_S`."""
        if self._rows and time.monotonic() - self._oldest_s >= FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        """Write the rows not written yet."""
        if not self._rows or self._writer is None:
            return
        rows, self._rows, self._gaps = self._rows, [], 0
        try:
            self._writer.write_batch(batch_of(rows))
        except (OSError, pa.ArrowException) as exc:
            self._failed(exc)
            return
        self.written += len(rows)

    def close(self) -> None:
        """Write what is left and close the file (idempotent)."""
        self.flush()
        if self._writer is None:
            return
        try:
            self._writer.close()
        except (OSError, pa.ArrowException) as exc:
            self._failed(exc)
        self._abort()

    def _failed(self, exc: BaseException) -> None:
        if self.error is None:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.error = f"cannot spool the rows of finished requests to {self.path}: {why}"
        self._abort()

    def _abort(self) -> None:
        self._writer = None
        if self._sink is not None:
            with contextlib.suppress(OSError, pa.ArrowException):
                self._sink.close()
            self._sink = None
        self._rows = []


def spooled_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """The complete batches of one spool (a stream cut short ends at its last whole batch)."""
    try:
        source = pa.OSFile(str(path), "rb")
    except FileNotFoundError:
        return
    with source:
        try:
            reader = pa.ipc.open_stream(source)
        except (pa.ArrowInvalid, OSError):
            return  # not even a schema yet
        while True:
            try:
                yield reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError):
                return  # the last batch was being written


def read_spools(paths: Sequence[Path], progress: Progress | None = None) -> list[RequestRecord]:
    """The rows of the spools at ``paths``, in send order (``sent_ns``; rows sent at the same
    instant in the order of ``paths``, then of their spool); ``progress`` counts them."""
    prog = progress or Progress()
    rows = [r for p in paths if os.path.exists(p) for r in records_of(_counted(p, prog))]
    rows.sort(key=lambda r: r.sent_ns)
    return rows


def _counted(path: Path, progress: Progress) -> Iterator[pa.RecordBatch]:
    for batch in spooled_batches(path):
        yield batch
        progress.advance(batch.num_rows)


def spooled_rows(paths: Sequence[Path]) -> int:
    """How many rows the spools at ``paths`` hold (their complete batches)."""
    return sum(b.num_rows for p in paths for b in spooled_batches(p))


def spooled_span(paths: Sequence[Path]) -> tuple[int, int] | None:
    """The first send and the last end (``sent_ns + e2e_ns``, or the send when the row has no
    end) of the rows of the spools at ``paths``, on the rows' clock; ``None`` when they hold
    no row."""
    first: int | None = None
    last: int | None = None
    for p in paths:
        for b in spooled_batches(p):
            if b.num_rows == 0:
                continue
            sent = b.column("sent_ns").to_numpy(zero_copy_only=False)
            e2e = b.column("e2e_ns").fill_null(0).to_numpy(zero_copy_only=False)
            lo, hi = int(sent.min()), int((sent + e2e).max())
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
    return None if first is None or last is None else (first, last)
