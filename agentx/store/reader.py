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
from agentx.store.schema import FORMAT, META_CREATED_AT, META_FORMAT, META_TRACE_ID, META_USER
from agentx.store.writer import compact, read_spool, spool_path

READ_BATCH_ROWS = 1024


@dataclass(frozen=True, slots=True)
class TraceInfo:
    path: Path
    format: str
    trace_id: str
    created_at: str
    metadata: dict[str, str]
    num_rows: int


def _pid_alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(path: str | os.PathLike[str], *, force: bool = False) -> int | None:
    """Rebuild ``path`` from its spool if one was left by a dead writer.

    Returns the number of exchanges recovered, or ``None`` when there was nothing to recover.
    """
    p = Path(path)
    spool = spool_path(p)
    if not spool.exists():
        return None
    header, _rows = read_spool(spool)
    _rows.close()  # type: ignore[attr-defined]
    pid = int(header.get("pid") or 0)
    if not force and _pid_alive(pid):
        raise TraceError(f"{p} is still being written (pid {pid}); stop that writer or wait for it")
    return compact(spool, p)


def open_trace(path: str | os.PathLike[str]) -> TraceInfo:
    """Check that ``path`` is an agentx trace of a known version (recovering it if needed)."""
    p = Path(path)
    if spool_path(p).exists():
        recover(p)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    try:
        pf = pq.ParquetFile(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(f"{p}: not a readable Parquet trace ({_first_line(exc)})") from None
    meta = pf.schema_arrow.metadata or {}
    fmt = meta.get(META_FORMAT, b"").decode()
    if not fmt.startswith("agentx.trace/"):
        raise TraceError(f"{p}: a Parquet file, but not an agentx trace")
    if fmt != FORMAT:
        raise TraceError(f"{p}: trace format {fmt!r} is not supported (this agentx reads {FORMAT})")
    user = meta.get(META_USER)
    return TraceInfo(
        path=p,
        format=fmt,
        trace_id=meta.get(META_TRACE_ID, b"").decode(),
        created_at=meta.get(META_CREATED_AT, b"").decode(),
        metadata=orjson.loads(user) if user else {},
        num_rows=pf.metadata.num_rows,
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def iter_exchanges(path: str | os.PathLike[str]) -> Iterator[Exchange]:
    """Every exchange in file order, with full request bodies rebuilt; memory stays bounded
    by the conversations still to be extended, not by the trace."""
    info = open_trace(path)
    try:
        pf = pq.ParquetFile(info.path)
        bases = pf.read(columns=["conversation_base_id"]).column(0).to_pylist()
        decoder = DeltaDecoder(dict(Counter(b for b in bases if b is not None)))
        for batch in pf.iter_batches(batch_size=READ_BATCH_ROWS):
            for row in batch.to_pylist():
                yield decoder.decode(row)
    except (pa.ArrowInvalid, OSError, KeyError) as exc:
        raise TraceError(f"{info.path}: corrupt trace ({_first_line(exc)})") from None


def read_trace(path: str | os.PathLike[str]) -> list[Exchange]:
    return list(iter_exchanges(path))
