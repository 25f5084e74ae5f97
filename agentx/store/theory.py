"""``theory.parquet``: what a run's theoretical prefix cache learnt from each request it sent.

One row per request sent (warm-up included), in send order: its prompt tokens, the tokens an
unbounded cache shared by the run's requests served (``hit_tokens``), and the chained block
hashes that request *added* to that cache (``new_blocks``: its blocks from the hit on). Since a
chained hash names its whole prefix, these rows are enough to replay the cache exactly, and to
replay the cache of several shards' requests as if they had shared one server
(:mod:`agentx.prefixcache.theory`). The file holds each distinct block once per run, about 8 bytes per
new block: a few MB for a run whose prompts share their prefixes as agent traffic does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
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


def write_theory(path: str | os.PathLike[str], rows: Iterable[TheoryRow], block_size: int) -> None:
    """Write ``rows`` (in send order) to ``path`` atomically (temp file + rename)."""
    p = Path(path)
    schema = SCHEMA.with_metadata(
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


def _table(rows: list[TheoryRow], schema: pa.Schema) -> pa.Table:
    sizes = np.fromiter((r.new_blocks.size for r in rows), dtype=np.int32, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    values = np.concatenate([r.new_blocks for r in rows]) if rows else np.zeros(0, dtype=np.uint64)
    blocks = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=pa.uint64()))
    return pa.table(
        {
            "request_id": pa.array([r.request_id for r in rows], pa.string()),
            "sent_ns": pa.array([r.sent_ns for r in rows], pa.int64()),
            "prompt_tokens": pa.array([r.prompt_tokens for r in rows], pa.int64()),
            "hit_tokens": pa.array([r.hit_tokens for r in rows], pa.int64()),
            "new_blocks": blocks,
        },
        schema=schema,
    )


@dataclass(frozen=True, slots=True)
class TheoryFile:
    path: Path
    block_size: int
    rows: int

    def __iter__(self) -> Iterator[TheoryRow]:
        """The rows in file (send) order, one row group at a time (bounded memory)."""
        f = pq.ParquetFile(self.path)
        for i in range(f.num_row_groups):
            t = f.read_row_group(i)
            col = t.column("new_blocks").combine_chunks()
            offsets = col.offsets.to_numpy()
            values = col.values.to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
            ids = t.column("request_id").to_pylist()
            sent = t.column("sent_ns").to_pylist()
            prompt = t.column("prompt_tokens").to_pylist()
            hit = t.column("hit_tokens").to_pylist()
            for k in range(t.num_rows):
                yield TheoryRow(
                    ids[k], sent[k], prompt[k], hit[k], values[offsets[k] : offsets[k + 1]]
                )


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
