"""Exchange <-> flat row, with conversation delta encoding. Pure Python: no pyarrow here.

A request body is split into its conversation (``messages``, or ``input`` for the Responses API)
and everything else. The conversation is stored as ``(base_id, base_len, delta)``: the first
``base_len`` items of the conversation of row ``base_id``, then ``delta``. Storage therefore grows
with what a session *appends*, not with the square of its length, and the reader rebuilds the
exact body (same keys, same order, JSON-equal values).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from agentx.models import (
    API_OPENAI_RESPONSES,
    JSON,
    Credential,
    Exchange,
    Response,
    Timing,
    Usage,
)

Row = dict[str, Any]


def dumps(value: JSON) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | None) -> JSON:
    return None if text is None else orjson.loads(text)


def conversation_key(api: str, body: JSON) -> str | None:
    if not isinstance(body, dict):
        return None
    key = "input" if api == API_OPENAI_RESPONSES else "messages"
    return key if isinstance(body.get(key), list) else None


def common_prefix_len(a: list[JSON], b: list[JSON]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class DeltaEncoder:
    """Chooses each row's delta base among recently written rows (bounded memory)."""

    def __init__(self, keep: int = 512) -> None:
        self._recent: OrderedDict[str, list[JSON]] = OrderedDict()
        self._last_in_thread: dict[str, str] = {}
        self._keep = keep

    def encode(self, ex: Exchange) -> Row:
        row = to_row(ex)
        key = conversation_key(ex.api, ex.request)
        conv: list[JSON] = list(ex.request[key]) if key else []
        base_id: str | None = None
        base_len = 0
        for candidate in (ex.parent_request_id, self._last_in_thread.get(ex.thread_id)):
            if candidate and candidate in self._recent:
                n = common_prefix_len(self._recent[candidate], conv)
                if n > base_len:
                    base_id, base_len = candidate, n
        row["conversation_base_id"] = base_id
        row["conversation_base_len"] = base_len if base_id else None
        row["conversation_delta"] = dumps(conv[base_len:]) if key else None
        if key:
            self._recent[ex.request_id] = conv
            self._recent.move_to_end(ex.request_id)
            while len(self._recent) > self._keep:
                self._recent.popitem(last=False)
        self._last_in_thread[ex.thread_id] = ex.request_id
        return row


def to_row(ex: Exchange) -> Row:
    """Every column but the conversation columns (filled by :class:`DeltaEncoder`)."""
    body = ex.request
    key = conversation_key(ex.api, body)
    if isinstance(body, dict):
        order = list(body.keys())
        tools = body.get("tools")
        system_key = "instructions" if ex.api == API_OPENAI_RESPONSES else "system"
        system = body.get(system_key)
        rest = {k: v for k, v in body.items() if k not in (key, "tools", system_key)}
        request_params = dumps(rest)
        request_tools = dumps(tools) if "tools" in body else None
        request_system = dumps(system) if system_key in body else None
        key_order = dumps(order)
        request_json = None
    else:
        request_params = request_tools = request_system = key_order = None
        request_json = dumps(body)
    return {
        "trace_id": ex.trace_id,
        "session_id": ex.session_id,
        "thread_id": ex.thread_id,
        "request_id": ex.request_id,
        "parent_request_id": ex.parent_request_id,
        "api": ex.api,
        "method": ex.method,
        "path": ex.path,
        "status": ex.status,
        "model": ex.model,
        "request_key_order": key_order,
        "request_params": request_params,
        "request_tools": request_tools,
        "request_system": request_system,
        "request_json": request_json,
        "conversation_key": key,
        "response_text": ex.response.text,
        "response_reasoning": ex.response.reasoning,
        "response_tool_calls": dumps(list(ex.response.tool_calls)),
        "response_stop_reason": ex.response.stop_reason,
        "response_message": dumps(ex.response.message) if ex.response.message is not None else None,
        "prompt_tokens": ex.usage.prompt_tokens,
        "cached_tokens": ex.usage.cached_tokens,
        "cache_creation_tokens": ex.usage.cache_creation_tokens,
        "completion_tokens": ex.usage.completion_tokens,
        "reasoning_tokens": ex.usage.reasoning_tokens,
        "start_wall_ns": ex.timing.start_wall_ns,
        "ttfb_ns": ex.timing.ttfb_ns,
        "ttft_ns": ex.timing.ttft_ns,
        "e2e_ns": ex.timing.e2e_ns,
        "chunk_offsets_ns": list(ex.timing.chunk_offsets_ns),
        "think_time_s": ex.think_time_s,
        "api_time_s": ex.api_time_s,
        "client": ex.client,
        "agent": ex.agent,
        "credentials": dumps([_cred(c) for c in ex.credentials]) if ex.credentials else None,
        "flags": list(ex.flags),
        "error": ex.error,
        "hash_ids": list(ex.hash_ids) if ex.hash_ids is not None else None,
        "hash_block_size": ex.hash_block_size,
    }


def _cred(c: Credential) -> dict[str, Any]:
    return {"header": c.header, "family": c.family, "salted_hash": c.salted_hash}


class DeltaDecoder:
    """Rebuilds full bodies in file order, keeping only conversations that later rows extend."""

    def __init__(self, base_refcounts: dict[str, int]) -> None:
        self._refs = dict(base_refcounts)
        self._convs: dict[str, list[JSON]] = {}

    def decode(self, row: Row) -> Exchange:
        key = row["conversation_key"]
        conv: list[JSON] | None = None
        if key is not None:
            delta = loads(row["conversation_delta"]) or []
            base_id = row["conversation_base_id"]
            if base_id is not None:
                base = self._convs.get(base_id)
                if base is None:
                    raise KeyError(f"row {row['request_id']} extends {base_id}, which is not before it")
                conv = base[: row["conversation_base_len"]] + delta
                self._refs[base_id] -= 1
                if self._refs[base_id] <= 0:
                    del self._convs[base_id]
            else:
                conv = delta
            if self._refs.get(row["request_id"], 0) > 0:
                self._convs[row["request_id"]] = conv
        return from_row(row, conv)


def _body(row: Row, conv: list[JSON] | None) -> JSON:
    if row["request_key_order"] is None:
        return loads(row["request_json"])
    parts: dict[str, JSON] = dict(loads(row["request_params"]))
    api = row["api"]
    system_key = "instructions" if api == API_OPENAI_RESPONSES else "system"
    if row["request_tools"] is not None:
        parts["tools"] = loads(row["request_tools"])
    if row["request_system"] is not None:
        parts[system_key] = loads(row["request_system"])
    if row["conversation_key"] is not None:
        # copy the items' list, never the items' identity with another row's body
        parts[row["conversation_key"]] = loads(dumps(conv))
    return {k: parts[k] for k in loads(row["request_key_order"]) if k in parts}


def from_row(row: Row, conv: list[JSON] | None) -> Exchange:
    creds = loads(row["credentials"]) or []
    hash_ids = row["hash_ids"]
    return Exchange(
        trace_id=row["trace_id"],
        session_id=row["session_id"],
        thread_id=row["thread_id"],
        request_id=row["request_id"],
        parent_request_id=row["parent_request_id"],
        api=row["api"],
        method=row["method"],
        path=row["path"],
        status=row["status"],
        model=row["model"],
        request=_body(row, conv),
        response=Response(
            text=row["response_text"],
            reasoning=row["response_reasoning"],
            tool_calls=tuple(loads(row["response_tool_calls"]) or ()),
            stop_reason=row["response_stop_reason"],
            message=loads(row["response_message"]),
        ),
        usage=Usage(
            prompt_tokens=row["prompt_tokens"],
            cached_tokens=row["cached_tokens"],
            cache_creation_tokens=row["cache_creation_tokens"],
            completion_tokens=row["completion_tokens"],
            reasoning_tokens=row["reasoning_tokens"],
        ),
        timing=Timing(
            start_wall_ns=row["start_wall_ns"],
            ttfb_ns=row["ttfb_ns"],
            ttft_ns=row["ttft_ns"],
            e2e_ns=row["e2e_ns"],
            chunk_offsets_ns=tuple(row["chunk_offsets_ns"] or ()),
        ),
        think_time_s=row["think_time_s"],
        api_time_s=row["api_time_s"],
        client=row["client"],
        agent=row["agent"],
        credentials=tuple(Credential(**c) for c in creds),
        flags=tuple(row["flags"] or ()),
        error=row["error"],
        hash_ids=tuple(hash_ids) if hash_ids is not None else None,
        hash_block_size=row["hash_block_size"],
    )
