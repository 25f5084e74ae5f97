"""The trace store: Parquet trace format v1.2 (reads v1 and v1.1 too), a file or a dataset
directory of files. The only part of agentx that imports pyarrow."""

import os

# Arrow's memory from the system allocator (malloc), set before pyarrow is first imported: its
# default, mimalloc, keeps the pages of the buffers it frees. A replay reads a session's row
# groups every few seconds (and its compute kernels allocate apart from pyarrow's own default
# pool, which ``pyarrow.set_memory_pool`` sets): its main process held ~35 MiB more with
# mimalloc on a 200K-row corpus. The environment's own choice is kept.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from agentx.store.dataset import is_dataset, trace_files
from agentx.store.reader import (
    TraceInfo,
    iter_exchanges,
    iter_records,
    open_trace,
    read_trace,
    recover,
)
from agentx.store.schema import FORMAT, METADATA_COLUMNS
from agentx.store.spool import spool_path
from agentx.store.writer import TraceWriter, new_trace, write_trace

__all__ = [
    "FORMAT",
    "METADATA_COLUMNS",
    "TraceInfo",
    "TraceWriter",
    "is_dataset",
    "iter_exchanges",
    "iter_records",
    "new_trace",
    "open_trace",
    "read_trace",
    "recover",
    "spool_path",
    "trace_files",
    "write_trace",
]
