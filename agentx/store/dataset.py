"""Datasets: a trace may be a directory of Parquet trace files, read in name order as one.

A dataset can be appended to (add a file), shared file by file, and read in parallel. Every
file is a complete trace of its own (its delta-encoded rows extend rows of the same file only),
so any subset of the files is a valid trace too. ``agentx convert DIR -o OUT/`` writes one
file per source file; :class:`DatasetWriter` names its parts ``part-00000.parquet``, ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx import DISTRIBUTION, __version__
from agentx.core.errors import ShapeError, TraceError
from agentx.core.lifecycle import Committing
from agentx.core.models import Exchange
from agentx.results.dataset import MANIFEST, Manifest
from agentx.results.dataset import SCHEMA as MANIFEST_SCHEMA
from agentx.store.schema import (
    FORMAT,
    META_CREATED_AT,
    META_FORMAT,
    META_TRACE_ID,
    META_USER,
    META_VERSION,
    META_WRITER,
    SCHEMA,
)
from agentx.store.writer import ROW_GROUP_ROWS, TraceWriter, new_trace, parquet_writer

SUFFIX = ".parquet"
SPOOL_SUFFIX = ".parquet.spool"
PART_ROWS = 65536  # exchanges per part of a DatasetWriter


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory of agentx trace files (or of a dead writer's spool):
    its first Parquet file carries ``agentx.format`` (a Hugging Face dataset's Parquet rows do
    not)."""
    p = Path(path)
    if not p.is_dir():
        return False
    parts = sorted(f for f in p.iterdir() if _is_part(f))
    if not parts:
        return False
    if any(f.name.endswith(SPOOL_SUFFIX) for f in parts):
        return True
    try:
        meta = pq.read_schema(parts[0]).metadata or {}
    except (OSError, pa.ArrowException):
        return True  # unreadable: let the store say what is wrong with it
    return META_FORMAT in meta


def _is_part(f: Path) -> bool:
    if f.name.startswith("."):
        return False  # temporary files of writers
    return f.name.endswith((SUFFIX, SPOOL_SUFFIX)) and f.is_file()


def packed_manifest(directory: str | os.PathLike[str]) -> Manifest | None:
    """The manifest of a directory ``agentx dataset pack`` wrote (``manifest.json`` of schema
    ``agentx.dataset/1``), else ``None``. A manifest of that schema that does not read is a
    :class:`TraceError`."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return None
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None  # not ours to judge: some other tool's manifest.json
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        return None
    try:
        return Manifest.from_json(doc)
    except ShapeError as exc:
        raise TraceError(f"{path}: {exc}") from None


def packed_files(directory: str | os.PathLike[str]) -> list[Path] | None:
    """The trace files of a packed dataset's default config (``data/<config>/*.parquet``, in
    the manifest's order), or ``None`` when ``directory`` is no packed dataset."""
    manifest = packed_manifest(directory)
    if manifest is None:
        return None
    config = manifest.config(manifest.default_config)
    if config is None or config.format != "agentx" or not config.files:
        raise TraceError(
            f"{directory}: its manifest names no agentx files for its default config "
            f"{manifest.default_config!r}"
        )
    return [Path(directory, *f.split("/")) for f in config.files]


def trace_files(path: str | os.PathLike[str]) -> list[Path]:
    """The one function that resolves a trace argument: a file is itself; a directory is its
    ``*.parquet`` files in name order (a file whose writer died, known by its spool, included:
    opening it recovers it); a packed dataset (``agentx dataset pack``) is its default
    config's files. Raises :class:`TraceError` for a directory without any."""
    p = Path(path)
    if not p.is_dir():
        return [p]
    packed = packed_files(p)
    if packed is not None:
        return packed
    names: set[str] = set()
    for f in p.iterdir():
        if _is_part(f):
            names.add(f.name[: -len(".spool")] if f.name.endswith(SPOOL_SUFFIX) else f.name)
    if not names:
        raise TraceError(f"{p}: a directory without agentx *.parquet trace files")
    return [p / n for n in sorted(names)]


def part_name(index: int) -> str:
    return f"part-{index:05d}{SUFFIX}"


class DatasetWriter(Committing):
    """Writes a dataset directory: a new part every ``part_rows`` exchanges, each a complete
    trace of its own (its own :class:`TraceWriter`, so memory and spool hold one part). The
    interface of :class:`TraceWriter`: ``append``, ``close``, ``count``, context manager.
    Parts are written into a hidden staging directory inside ``directory`` and moved into
    place by ``close`` once all are complete (an exception removes them instead: the dataset
    is never left half-written); files already in the directory are kept, and part numbers
    continue after them."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        trace_id: str | None = None,
        metadata: dict[str, str] | None = None,
        part_rows: int = PART_ROWS,
    ) -> None:
        self.path = Path(directory)
        if self.path.exists() and not self.path.is_dir():
            raise TraceError(f"cannot write a dataset to {self.path}: it is a file")
        self.trace_id = trace_id or uuid.uuid4().hex
        self._metadata = metadata
        self._part_rows = part_rows
        self._writer: TraceWriter | None = None
        self._next = len(trace_files(self.path)) if is_dataset(self.path) else 0
        self._stage = self.path / f".parts.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self.count = 0
        self.parts: list[Path] = []  # where the parts end up

    def append(self, ex: Exchange) -> None:
        if self._writer is None or self._writer.count >= self._part_rows:
            self._roll()
        assert self._writer is not None
        self._writer.append(ex)
        self.count += 1

    def _roll(self) -> None:
        if self._writer is not None:
            self._writer.close()
        while True:
            target = self.path / part_name(self._next)
            self._next += 1
            if not target.exists() and not target.with_name(target.name + ".spool").exists():
                break
        self._stage.mkdir(parents=True, exist_ok=True)
        self._writer = TraceWriter(
            self._stage / target.name, trace_id=self.trace_id, metadata=self._metadata
        )
        self.parts.append(target)

    def close(self) -> None:
        """Complete the last part and move every part into place (idempotent)."""
        if self._writer is None and not self.parts:
            self._roll()  # an empty dataset is one empty part: still a valid trace
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            for target in self.parts:
                os.replace(self._stage / target.name, target)
            self._stage.rmdir()

    def abort(self) -> None:
        """Drop what was written (the directory is left as it was)."""
        if self._writer is not None:
            with contextlib.suppress(TraceError, OSError):
                self._writer.close()
            self._writer = None
        shutil.rmtree(self._stage, ignore_errors=True)


@contextlib.contextmanager
def open_writer(
    path: str | os.PathLike[str],
    *,
    dataset: bool,
    force: bool = False,
    trace_id: str | None = None,
    metadata: dict[str, str] | None = None,
) -> Iterator[TraceWriter | DatasetWriter]:
    """A writer of a whole trace (scrub, anonymize, convert): one Parquet file
    (:func:`agentx.store.writer.new_trace`: written aside, an existing file replaced only with
    ``force``), or with ``dataset`` a directory of parts (:class:`DatasetWriter`: added to what
    is there, nothing replaced)."""
    if dataset:
        with DatasetWriter(path, trace_id=trace_id, metadata=metadata) as dw:
            yield dw
    else:
        with new_trace(path, force=force, trace_id=trace_id, metadata=metadata) as tw:
            yield tw


class TraceConcat:
    """Writes one trace file from trace files handed over in order (:meth:`add`), as they come:
    each is copied as stored (its deltas extend rows of the same file; request ids must be
    unique across files) and then may be deleted, so a staged import holds only the files not
    yet appended. Rows are re-batched into row groups; memory holds about one. The file is
    written under a temporary name and renamed into place by :meth:`close` (:meth:`abort`
    removes it)."""

    def __init__(
        self, path: str | os.PathLike[str], *, trace_id: str, metadata: dict[str, str] | None
    ) -> None:
        self.path = Path(path)
        meta = {
            META_FORMAT: FORMAT.encode(),
            META_TRACE_ID: trace_id.encode(),
            META_CREATED_AT: datetime.now(UTC).isoformat().encode(),
            META_WRITER: f"{DISTRIBUTION} {__version__}".encode(),
            META_VERSION: __version__.encode(),
            META_USER: orjson.dumps(metadata or {}),
        }
        self._schema = SCHEMA.with_metadata(meta)
        self._tmp = self.path.with_name(
            f".{self.path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        )
        self._pending: list[pa.Table] = []
        self._rows = 0
        self.count = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer: pq.ParquetWriter | None = parquet_writer(self._tmp, self._schema)
        except (OSError, pa.ArrowException) as exc:
            raise self._error(exc) from None

    def add(self, source: Path) -> int:
        """Append the rows of one trace file; returns how many."""
        try:
            table = _as_current(pq.read_table(source))
            self._pending.append(table)
            self._rows += table.num_rows
            if self._rows >= ROW_GROUP_ROWS:
                self._flush()
        except (OSError, pa.ArrowException) as exc:
            self.abort()
            raise self._error(exc) from None
        return int(table.num_rows)

    def _flush(self) -> None:
        assert self._writer is not None
        table = pa.concat_tables(self._pending) if self._pending else self._schema.empty_table()
        self._writer.write_table(
            table.replace_schema_metadata(self._schema.metadata), row_group_size=1 << 20
        )
        self.count += table.num_rows
        self._pending, self._rows = [], 0

    def close(self) -> int:
        """Write what is pending and rename the file into place; returns the rows written."""
        if self._writer is None:
            return self.count
        try:
            if self._pending or self.count == 0:
                self._flush()
            self._writer.close()
            self._writer = None
            os.replace(self._tmp, self.path)
        except (OSError, pa.ArrowException) as exc:
            self.abort()
            raise self._error(exc) from None
        return self.count

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(OSError, pa.ArrowException):
                self._writer.close()
            self._writer = None
        self._tmp.unlink(missing_ok=True)

    def _error(self, exc: BaseException) -> TraceError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return TraceError(f"cannot write trace {self.path}: {reason}")


def concat_traces(
    sources: list[Path],
    path: str | os.PathLike[str],
    *,
    trace_id: str,
    metadata: dict[str, str] | None = None,
) -> int:
    """Write the rows of the trace files ``sources``, in order, as one trace file (atomically).
    Returns the number of rows."""
    out = TraceConcat(path, trace_id=trace_id, metadata=metadata)
    for src in sources:
        out.add(src)
    return out.close()


def _as_current(table: pa.Table) -> pa.Table:
    """A table of any readable version in the current schema (a v1 file lacks some columns)."""
    for name in SCHEMA.names:
        if name not in table.column_names:
            field = SCHEMA.field(name)
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select(SCHEMA.names).cast(SCHEMA)
