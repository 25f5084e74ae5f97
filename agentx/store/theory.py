"""``theory.parquet``: what a run's theoretical prefix cache learnt from each request it sent.

One row per request sent (warm-up included), in send order: its prompt tokens, the tokens an
unbounded cache shared by the run's requests served (``hit_tokens``), and the chained block
hashes that request *added* to that cache (``new_blocks``: its blocks from the hit on). Since a
chained hash names its whole prefix, these rows are enough to replay the cache exactly, and to
replay the cache of several shards' requests as if they had shared one server
(:mod:`agentx.prefixcache.theory`). The file holds each distinct block once per run, about 8 bytes per
new block: a few MB for a run whose prompts share their prefixes as agent traffic does. A run
routed over several replicas adds, per row, the replica and the same two figures for that
replica's own unbounded cache (``replica_hit_tokens``, ``replica_new_blocks``), from which a
merge replays each replica's cache as exactly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from agentx import __version__
from agentx.core.errors import TraceError
from agentx.prefixcache.theory import TheoryRow
from agentx.store.schema import META_FORMAT, META_VERSION

FORMAT = "agentx.theory/1"
META_BLOCK_SIZE = b"agentx.block_size"
BATCH_ROWS = 4096

SCHEMA = pa.schema(
    [
        ("request_id", pa.string()),
        ("sent_ns", pa.int64()),  # the run's clock (summary.json "clock" maps it to wall time)
        ("prompt_tokens", pa.int64()),
        ("hit_tokens", pa.int64()),
        ("new_blocks", pa.list_(pa.uint64())),
    ]
)
# a run routed over several replicas: the replica, and what its own cache served and learnt
ROUTED_SCHEMA = pa.schema(
    [
        *SCHEMA,
        ("replica", pa.int64()),
        ("replica_hit_tokens", pa.int64()),
        ("replica_new_blocks", pa.list_(pa.uint64())),
    ]
)


def write_theory(
    path: str | os.PathLike[str],
    rows: Iterable[TheoryRow],
    block_size: int,
    *,
    routed: bool = False,
) -> None:
    """Write ``rows`` (in send order) to ``path`` atomically (temp file + rename). ``routed``:
    the run spread its requests over several replicas, so the file keeps the replica columns
    (a run of one endpoint writes the file it always did)."""
    p = Path(path)
    schema = (ROUTED_SCHEMA if routed else SCHEMA).with_metadata(
        {
            META_FORMAT: FORMAT.encode(),
            META_VERSION: __version__.encode(),
            META_BLOCK_SIZE: str(block_size).encode(),
        }
    )
    tmp = p.with_name(p.name + ".tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            batch: list[TheoryRow] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= BATCH_ROWS:
                    writer.write_table(_table(batch, schema))
                    batch = []
            writer.write_table(_table(batch, schema))
        os.replace(tmp, p)
    except OSError as exc:
        raise TraceError(f"cannot write {p}: {exc.strerror or exc}") from None


def _blocks(arrays: list[npt.NDArray[np.uint64] | None]) -> pa.Array:
    """A ``list<uint64>`` column of one array per row (``None``: null), without a Python int
    per block."""
    sizes = np.fromiter((0 if a is None else a.size for a in arrays), np.int32, len(arrays))
    offsets = np.zeros(len(arrays) + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    present = [a for a in arrays if a is not None]
    values = np.concatenate(present) if present else np.zeros(0, dtype=np.uint64)
    mask = None
    if len(present) < len(arrays):
        mask = pa.array([a is None for a in arrays], pa.bool_())
    return pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(values, type=pa.uint64()), mask=mask
    )


def _table(rows: list[TheoryRow], schema: pa.Schema) -> pa.Table:
    columns = {
        "request_id": pa.array([r.request_id for r in rows], pa.string()),
        "sent_ns": pa.array([r.sent_ns for r in rows], pa.int64()),
        "prompt_tokens": pa.array([r.prompt_tokens for r in rows], pa.int64()),
        "hit_tokens": pa.array([r.hit_tokens for r in rows], pa.int64()),
        "new_blocks": _blocks([r.new_blocks for r in rows]),
    }
    if "replica" in schema.names:
        columns["replica"] = pa.array([r.replica for r in rows], pa.int64())
        columns["replica_hit_tokens"] = pa.array([r.replica_hit_tokens for r in rows], pa.int64())
        columns["replica_new_blocks"] = _blocks([r.replica_new_blocks for r in rows])
    return pa.table(columns, schema=schema)


@dataclass(frozen=True, slots=True)
class TheoryFile:
    path: Path
    block_size: int
    rows: int

    def __iter__(self) -> Iterator[TheoryRow]:
        """The rows in file (send) order, one row group at a time (bounded memory). A file of
        a run of one endpoint has no replica columns: its rows have none."""
        f = pq.ParquetFile(self.path)
        for i in range(f.num_row_groups):
            t = f.read_row_group(i)
            blocks = _views(t.column("new_blocks"))
            ids = t.column("request_id").to_pylist()
            sent = t.column("sent_ns").to_pylist()
            prompt = t.column("prompt_tokens").to_pylist()
            hit = t.column("hit_tokens").to_pylist()
            routed = "replica" in t.column_names
            replica = t.column("replica").to_pylist() if routed else [None] * t.num_rows
            local_hit = (
                t.column("replica_hit_tokens").to_pylist() if routed else [None] * t.num_rows
            )
            local = _views(t.column("replica_new_blocks")) if routed else [None] * t.num_rows
            for k in range(t.num_rows):
                yield TheoryRow(
                    ids[k],
                    sent[k],
                    prompt[k],
                    hit[k],
                    _present(blocks[k]),
                    replica[k],
                    local_hit[k],
                    local[k] if replica[k] is not None else None,
                )


def _views(column: pa.ChunkedArray) -> list[npt.NDArray[np.uint64] | None]:
    """One array per row of a ``list<uint64>`` column, views of one copy (null: ``None``)."""
    col = column.combine_chunks()
    offsets = col.offsets.to_numpy()
    values = col.values.to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    return [values[offsets[k] : offsets[k + 1]] if valid[k] else None for k in range(len(col))]


def _present(a: npt.NDArray[np.uint64] | None) -> npt.NDArray[np.uint64]:
    return a if a is not None else np.zeros(0, dtype=np.uint64)


def open_theory(path: str | os.PathLike[str]) -> TheoryFile:
    """A ``theory.parquet`` to iterate. Raises ``TraceError`` when it is not one."""
    p = Path(path)
    try:
        f = pq.ParquetFile(p)
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(f"{p}: not a readable theory.parquet ({exc})") from None
    meta = f.schema_arrow.metadata or {}
    if meta.get(META_FORMAT) != FORMAT.encode() or META_BLOCK_SIZE not in meta:
        raise TraceError(f"{p}: not an {FORMAT} file")
    return TheoryFile(p, int(meta[META_BLOCK_SIZE]), f.metadata.num_rows)
