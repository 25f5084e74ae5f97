"""The Parquet schema of trace format v1 (see docs/trace-format.md)."""

from __future__ import annotations

import pyarrow as pa

FORMAT = "agentx.trace/1"
META_FORMAT = b"agentx.format"
META_TRACE_ID = b"agentx.trace_id"
META_CREATED_AT = b"agentx.created_at"
META_WRITER = b"agentx.writer"  # "<distribution> <version>", e.g. "agentx-replay 0.1.0"
META_VERSION = b"agentx.version"  # the writer's agentx version alone, e.g. "0.1.0"
META_USER = b"agentx.metadata"

_str = pa.string()
_i64 = pa.int64()

SCHEMA = pa.schema(
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
COLUMNS = tuple(SCHEMA.names)
