"""The trace store: Parquet trace format v1. The only part of agentx that imports pyarrow."""

from agentx.store.reader import TraceInfo, iter_exchanges, open_trace, read_trace, recover
from agentx.store.schema import FORMAT
from agentx.store.writer import TraceWriter, new_trace, spool_path, write_trace

__all__ = [
    "FORMAT",
    "TraceInfo",
    "TraceWriter",
    "iter_exchanges",
    "new_trace",
    "open_trace",
    "read_trace",
    "recover",
    "spool_path",
    "write_trace",
]
