"""Exchange <-> flat row, with conversation delta encoding. Pure Python: no pyarrow here.

A request body is split into its conversation (``messages``, or ``input`` for the Responses API)
and everything else. The conversation is stored as ``(base_id, base_len, delta)``: the first
``base_len`` items of the conversation of row ``base_id``, then ``delta``. Storage therefore grows
with what a session *appends*, not with the square of its length, and the reader rebuilds the
exact body (same keys, same order, JSON-equal values).

Items are compared by their serialised JSON, never with Python ``==`` (which calls ``1``,
``1.0`` and ``True`` equal and ignores key order), so a reused prefix is byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

from agentx.apis import bodies
from agentx.apis.bodies import system_key
from agentx.core.models import JSON, Credential, Exchange, Response, Timing, Usage
from agentx.store.hashdelta import HashDeltaDecoder, HashDeltaEncoder

Row = dict[str, Any]
Parse = Callable[[str | None, str], JSON]  # (column text, column name) -> value

# the text columns of a row that hold JSON documents (everything else is a plain value)
JSON_COLUMNS = (
    "request_key_order",
    "request_params",
    "request_tools",
    "request_system",
    "request_json",
    "conversation_delta",
    "response_tool_calls",
    "response_message",
    "credentials",
    "import_fields",
)


def dumps_bytes(value: JSON) -> bytes:
    """Compact JSON. orjson, or the standard library for what orjson refuses (lone surrogates,
    integers beyond 64 bits); the fallback escapes to ASCII so the text is always valid UTF-8."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def dumps(value: JSON) -> str:
    return dumps_bytes(value).decode()


def loads(text: str | bytes | None) -> JSON:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # lone-surrogate escapes written by the fallback encoder


def conversation_key(api: str, body: JSON) -> str | None:
    if not isinstance(body, dict):
        return None
    key = bodies.conversation_key(api)
    return key if isinstance(body.get(key), list) else None


def common_prefix_len(a: list[bytes], b: list[bytes]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def join_items(items: list[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"


class DeltaEncoder:
    """Chooses each row's delta base among earlier rows, in bounded memory.

    Candidates are the row's ``parent_request_id`` and the previous row of its thread; the one
    sharing the longest prefix wins. Items are compared by a 128-bit digest of their serialised
    JSON, so what is remembered is ~50 bytes per item, not the items: the latest row of every
    thread (up to ``keep_threads`` threads, least recently extended forgotten first) and the
    ``keep_recent`` most recent rows (parents in other threads: forks, subagents). Thousands of
    sessions interleaved in one file still delta-encode.
    """

    def __init__(self, keep_recent: int = 512, keep_threads: int = 65536) -> None:
        self._recent: OrderedDict[str, list[bytes]] = OrderedDict()
        self._thread_last: OrderedDict[tuple[str, str], tuple[str, list[bytes]]] = OrderedDict()
        self._keep_recent = keep_recent
        self._keep_threads = keep_threads
        self._hashes = HashDeltaEncoder(keep_threads=min(keep_threads, 16384))

    def encode(self, ex: Exchange) -> Row:
        row = to_row(ex)
        if ex.hash_ids is not None:
            ids = ex.hash_ids if isinstance(ex.hash_ids, tuple) else tuple(ex.hash_ids)
            d = self._hashes.encode(
                ex.request_id, ex.parent_request_id, (ex.session_id, ex.thread_id), ids
            )
            row["hash_ids_base_id"] = d.base_id
            row["hash_ids_base_len"] = d.base_len if d.base_id is not None else None
            row["hash_ids_delta"] = list(d.delta)
        key = row["conversation_key"]
        raw: list[bytes] = [dumps_bytes(m) for m in ex.request[key]] if key else []
        digests = [hashlib.blake2b(item, digest_size=16).digest() for item in raw]
        thread = (ex.session_id, ex.thread_id)
        candidates: list[tuple[str, list[bytes]]] = []
        if ex.parent_request_id and ex.parent_request_id in self._recent:
            candidates.append((ex.parent_request_id, self._recent[ex.parent_request_id]))
        if thread in self._thread_last:
            candidates.append(self._thread_last[thread])
        base_id: str | None = None
        base_len = 0
        for candidate, seen in candidates:
            n = common_prefix_len(seen, digests)
            if n > base_len:
                base_id, base_len = candidate, n
        row["conversation_base_id"] = base_id
        row["conversation_base_len"] = base_len if base_id is not None else None
        row["conversation_delta"] = join_items(raw[base_len:]).decode() if key else None
        if key:
            self._recent[ex.request_id] = digests
            self._recent.move_to_end(ex.request_id)
            while len(self._recent) > self._keep_recent:
                self._recent.popitem(last=False)
            self._thread_last[thread] = (ex.request_id, digests)
            self._thread_last.move_to_end(thread)
            while len(self._thread_last) > self._keep_threads:
                self._thread_last.popitem(last=False)
        return row


def to_row(ex: Exchange) -> Row:
    """Every column but the conversation columns (filled by :class:`DeltaEncoder`)."""
    body = ex.request
    key = conversation_key(ex.api, body)
    request_params: str | None
    request_tools: str | None
    request_system: str | None
    key_order: str | None
    request_json: str | None
    if isinstance(body, dict):
        skey = system_key(ex.api)
        rest = {k: v for k, v in body.items() if k not in (key, "tools", skey)}
        request_params = dumps(rest)
        request_tools = dumps(body["tools"]) if "tools" in body else None
        request_system = dumps(body[skey]) if skey in body else None
        key_order = dumps(list(body.keys()))
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
        "host": ex.host,
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
        "hash_ids": None,  # v1.1 writes the delta columns (filled by DeltaEncoder)
        "hash_block_size": ex.hash_block_size,
        "hash_ids_base_id": None,
        "hash_ids_base_len": None,
        "hash_ids_delta": None,
        "import_fields": dumps(ex.import_fields) if ex.import_fields is not None else None,
    }


def _cred(c: Credential) -> dict[str, Any]:
    return {"header": c.header, "family": c.family, "salted_hash": c.salted_hash}


class DeltaDecoder:
    """Rebuilds full bodies in file order, keeping only conversations that later rows extend.

    By default every body is a fresh object tree (safe to mutate). With ``shared=True`` a row's
    conversation reuses the *same* item objects as the earlier rows it extends, so decoding costs
    what the row appended rather than the whole conversation; such bodies must be treated as
    read-only. Tools and system values repeated verbatim are shared too.
    """

    def __init__(
        self,
        base_refcounts: dict[str, int],
        *,
        shared: bool = False,
        hash_refcounts: dict[str, int] | None = None,
    ) -> None:
        self._refs = dict(base_refcounts)
        self._shared = shared
        self._items: dict[str, list[Any]] = {}  # bytes per item (copy mode) or objects (shared)
        self._memo: dict[str, dict[str, JSON]] = {}
        self._hashes = HashDeltaDecoder(hash_refcounts or {})

    def decode(self, row: Row) -> Exchange:
        key = row["conversation_key"]
        conv: list[JSON] | None = None
        if key is not None:
            conv = self._conversation(row)
        return from_row(
            row, conv, self._parse_repeated if self._shared else _plain_parse, self.hash_ids(row)
        )

    def hash_ids(self, row: Row) -> tuple[int, ...] | None:
        """The row's full block ids: ``hash_ids`` (v1), or rebuilt from the delta columns."""
        full = row.get("hash_ids")
        if full is not None:
            return tuple(full)
        delta = row.get("hash_ids_delta")
        if delta is None:
            return None
        base_id, base_len = row.get("hash_ids_base_id"), row.get("hash_ids_base_len")
        return self._hashes.decode(row["request_id"], base_id, base_len, tuple(delta))

    def _conversation(self, row: Row) -> list[JSON]:
        delta_text: str = row["conversation_delta"] or "[]"
        delta = loads(delta_text)
        if not isinstance(delta, list):
            raise ValueError(f"row {row['request_id']}: conversation_delta is not a JSON array")
        items: list[Any] = delta if self._shared else [dumps_bytes(d) for d in delta]
        base_id = row["conversation_base_id"]
        if base_id is not None:
            base = self._items.get(base_id)
            base_len = row["conversation_base_len"] or 0
            if base is None or base_len > len(base):
                raise ValueError(
                    f"row {row['request_id']} extends {base_id}, which is not before it"
                )
            items = base[:base_len] + items
            self._refs[base_id] -= 1
            if self._refs[base_id] <= 0:
                del self._items[base_id]
        if self._refs.get(row["request_id"], 0) > 0:
            self._items[row["request_id"]] = items
        if self._shared:
            return list(items)
        if base_id is None:
            return list(delta)  # freshly parsed: nobody else holds these objects
        return list(loads(join_items(items))) if items else []

    def _parse_repeated(self, text: str | None, column: str = "") -> JSON:
        """Parse a JSON column, returning the same object for text seen recently in it (the
        tools and system prompt of the sessions in flight)."""
        if text is None:
            return None
        memo = self._memo.setdefault(column, {})
        value = memo.get(text, _MISSING)
        if value is _MISSING:
            value = loads(text)
            if len(memo) >= REPEATED_MEMO:
                del memo[next(iter(memo))]  # oldest first
            memo[text] = value
        return value


_MISSING = object()
REPEATED_MEMO = 256  # distinct tools/system values remembered per column (shared decoding)


def _body(row: Row, conv: list[JSON] | None, parse: Parse) -> JSON:
    if row["request_key_order"] is None:
        return loads(row["request_json"])
    parts: dict[str, JSON] = dict(loads(row["request_params"]))
    skey = system_key(row["api"])
    if row["request_tools"] is not None:
        parts["tools"] = parse(row["request_tools"], "request_tools")
    if row["request_system"] is not None:
        parts[skey] = parse(row["request_system"], "request_system")
    if row["conversation_key"] is not None:
        parts[row["conversation_key"]] = conv
    return {k: parts[k] for k in loads(row["request_key_order"]) if k in parts}


def _plain_parse(text: str | None, column: str = "") -> JSON:
    return loads(text)


def from_row(
    row: Row,
    conv: list[JSON] | None,
    parse: Parse = _plain_parse,
    hash_ids: tuple[int, ...] | None = None,
) -> Exchange:
    """The exchange of one decoded row; ``hash_ids`` are its full block ids (see
    :meth:`DeltaDecoder.hash_ids`), else the row's own v1 ``hash_ids`` column."""
    creds = loads(row["credentials"]) or []
    if hash_ids is None and row.get("hash_ids") is not None:
        hash_ids = tuple(row["hash_ids"])
    return Exchange(
        trace_id=row["trace_id"],
        session_id=row["session_id"],
        thread_id=row["thread_id"],
        request_id=row["request_id"],
        parent_request_id=row["parent_request_id"],
        api=row["api"],
        method=row["method"],
        path=row["path"],
        host=row.get("host"),
        status=row["status"],
        model=row["model"],
        request=_body(row, conv, parse),
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
        hash_ids=hash_ids,
        hash_block_size=row["hash_block_size"],
        import_fields=loads(row.get("import_fields")),
    )
