"""A trace's fingerprint: the sha256 of its rows, the one implementation (``summary.json``'s
``trace_fingerprint``; a comparison and a trend check it).

The rows are hashed, not the files: every row of every file (a dataset's in name order), each
as the JSON list of its values in the schema's column order, a column a file of an older format
lacks as ``null``. So a trace re-written with other compression, row groups or files, or read
from an older format version, keeps its fingerprint; a row changed, added, dropped or moved
changes it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.errors import TraceError
from agentx.store.schema import COLUMNS
from agentx.store.select import dataset_files

# rows decoded at a time: the peak of a replay's fingerprint child is its imports plus a batch's
# Python values (a 200K-row corpus: 1,024 rows ~0.2 GiB in all, 256 ~0.13 GiB with the rest below)
BATCH_ROWS = 256


def rows_sha256(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> str:
    """The hex sha256 of the rows of an agentx trace (a file or a dataset directory);
    ``progress`` is told the rows of each batch hashed (a caller's wait is bounded by it)."""
    digest = hashlib.sha256()
    for f in dataset_files(path):
        try:
            # not pre-buffered: a row group's columns read whole ahead of the batches held
            # ~40 MB more at the peak; one thread: the lanes' CPU is not this child's to take
            pf = pq.ParquetFile(f, pre_buffer=False)
            present = [c for c in COLUMNS if c in pf.schema_arrow.names]
            batches = pf.iter_batches(batch_size=BATCH_ROWS, columns=present, use_threads=False)
            for batch in batches:
                values = {c: batch.column(c).to_pylist() for c in present}
                missing = [None] * batch.num_rows
                columns = [values.get(c, missing) for c in COLUMNS]
                for row in zip(*columns, strict=True):
                    digest.update(orjson.dumps(row))
                    digest.update(b"\n")
                if progress is not None:
                    progress(batch.num_rows)
        except (pa.ArrowException, OSError) as exc:
            raise TraceError(f"{f}: cannot read its rows ({exc})") from None
    return digest.hexdigest()
