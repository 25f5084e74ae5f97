"""The Parquet schema of trace format v1.2 (see docs/trace-format.md).

v1.1 adds four columns to v1: the delta-encoded block ids of hash-only rows
(``hash_ids_base_id``, ``hash_ids_base_len``, ``hash_ids_delta``) and ``import_fields`` (what an
importer keeps of its source record so an export gives it back exactly). v1.2 adds ``host``
(where capture sent the request). Readers accept every version; an older file reads as if the
columns it lacks were all null.
"""

from __future__ import annotations

import pyarrow as pa

FORMAT_V1 = "agentx.trace/1"
FORMAT_V1_1 = "agentx.trace/1.1"
FORMAT = "agentx.trace/1.2"  # what the writer writes
READABLE_FORMATS = (FORMAT_V1, FORMAT_V1_1, FORMAT)
META_FORMAT = b"agentx.format"
META_TRACE_ID = b"agentx.trace_id"
META_CREATED_AT = b"agentx.created_at"
META_WRITER = b"agentx.writer"  # "<distribution> <version>", e.g. "agentx-replay 0.1.0"
META_VERSION = b"agentx.version"  # the writer's agentx version alone, e.g. "0.1.0"
META_USER = b"agentx.metadata"

_str = pa.string()
_i64 = pa.int64()

SCHEMA_V1 = pa.schema(
    [
        ("trace_id", _str),
        ("session_id", _str),
        ("thread_id", _str),
        ("request_id", _str),
        ("parent_request_id", _str),
        ("api", _str),
        ("method", _str),
        ("path", _str),
        ("status", pa.int32()),
        ("model", _str),
        ("request_key_order", _str),
        ("request_params", _str),
        ("request_tools", _str),
        ("request_system", _str),
        ("request_json", _str),
        ("conversation_key", _str),
        ("conversation_base_id", _str),
        ("conversation_base_len", pa.int32()),
        ("conversation_delta", _str),
        ("response_text", _str),
        ("response_reasoning", _str),
        ("response_tool_calls", _str),
        ("response_stop_reason", _str),
        ("response_message", _str),
        ("prompt_tokens", _i64),
        ("cached_tokens", _i64),
        ("cache_creation_tokens", _i64),
        ("completion_tokens", _i64),
        ("reasoning_tokens", _i64),
        ("start_wall_ns", _i64),
        ("ttfb_ns", _i64),
        ("ttft_ns", _i64),
        ("e2e_ns", _i64),
        ("chunk_offsets_ns", pa.list_(_i64)),
        ("think_time_s", pa.float64()),
        ("api_time_s", pa.float64()),
        ("client", _str),
        ("agent", _str),
        ("credentials", _str),
        ("flags", pa.list_(_str)),
        ("error", _str),
        ("hash_ids", pa.list_(_i64)),
        ("hash_block_size", pa.int32()),
    ]
)
ADDED_V1_1 = pa.schema(
    [
        ("hash_ids_base_id", _str),
        ("hash_ids_base_len", pa.int32()),
        ("hash_ids_delta", pa.list_(_i64)),
        ("import_fields", _str),
    ]
)
ADDED_V1_2 = pa.schema([("host", _str)])
SCHEMA = pa.schema([*SCHEMA_V1, *ADDED_V1_1, *ADDED_V1_2])
COLUMNS = tuple(SCHEMA.names)
COLUMNS_V1 = tuple(SCHEMA_V1.names)
COLUMNS_V1_1 = (*COLUMNS_V1, *ADDED_V1_1.names)
# the columns a file of each readable format must have
REQUIRED_COLUMNS = {FORMAT_V1: COLUMNS_V1, FORMAT_V1_1: COLUMNS_V1_1, FORMAT: COLUMNS}

# Column groups, for readers that project (see agentx.store.reader).
HASH_COLUMNS = ("hash_ids", "hash_ids_base_id", "hash_ids_base_len", "hash_ids_delta")
REQUEST_COLUMNS = (
    "request_key_order",
    "request_params",
    "request_tools",
    "request_system",
    "request_json",
    "conversation_key",
    "conversation_base_id",
    "conversation_base_len",
    "conversation_delta",
)
RESPONSE_TEXT_COLUMNS = (
    "response_text",
    "response_reasoning",
    "response_tool_calls",
    "response_message",
)
# Small per-row values: what a plan, `stats` or `simulate` reads besides the block ids.
METADATA_COLUMNS = tuple(
    c
    for c in COLUMNS
    if c not in HASH_COLUMNS
    and c not in REQUEST_COLUMNS
    and c not in RESPONSE_TEXT_COLUMNS
    and c not in ("chunk_offsets_ns", "credentials", "import_fields")
)
# The list columns whose elements are block ids: written with DELTA_BINARY_PACKED (ids of a
# row are mostly consecutive, so each costs a few bits).
ID_LIST_COLUMNS = ("hash_ids", "hash_ids_delta")
