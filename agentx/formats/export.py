"""Writing traces for other tools: Mooncake JSONL and Weka JSON.

Both formats describe a prompt by its length and the ids of its token blocks, where an equal id
means an equal prefix up to the end of that block. For text exchanges the blocks are cut from
the request's cl100k rendering (:func:`agentx.tokens.request_tokens`, the same tokens
``agentx stats`` hashes), chained with :func:`agentx.prefix.block_hashes`, and numbered densely
in order of first appearance. Hash-only exchanges (imported Weka/Mooncake) at the target block
size keep their ids; at another block size their blocks are laid out as the synthetic tokens
``agentx convert`` would give them (:func:`agentx.synth.hash_id_tokens`) and cut again.

- Mooncake: one line per model call, ``{"timestamp" (ms since the first), "input_length",
  "output_length", "hash_ids"}`` with 512-token blocks, the last one partial (``ceil(n/512)``
  ids). No ``session_id``: AIPerf reads a session's lines as turns that append to each other,
  while these lines each carry their whole prompt.
- Weka: one file per session, 64-token blocks covering only full blocks (``floor(n/64)`` ids),
  ``t``/``think_time``/``api_time``/``ttft`` in seconds, every thread but the session's first
  as a ``subagent`` entry with its own relative ``t``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agentx.errors import TraceError, UsageError
from agentx.flags import FLAG_SUBAGENT, weka_values
from agentx.hitrate import is_model_call
from agentx.models import Exchange
from agentx.outputs import atomic_output, check_output, write_atomic
from agentx.prefix import HashArray, block_hashes, chain_ids
from agentx.synth import hash_id_tokens
from agentx.tokens import TokenArray, conversation, count_tokens, request_tokens

MOONCAKE_BLOCK_SIZE = 512
WEKA_BLOCK_SIZE = 64
_ID_STRIDE = 1 << 32  # the Weka importer offsets the k-th local-scope file's ids by k * 2**32


def exchange_tokens(ex: Exchange) -> TokenArray:
    """The token ids a replay of ``ex`` sends: rendered text, or the synthetic hash-id layout."""
    if ex.hash_ids is not None and ex.hash_block_size:
        n = (
            ex.usage.prompt_tokens
            if ex.usage.prompt_tokens is not None
            else len(ex.hash_ids) * ex.hash_block_size
        )
        return hash_id_tokens(ex.hash_ids, ex.hash_block_size, n)
    return request_tokens(ex.api, ex.request)


def _tail_key(hashes: HashArray, tail: TokenArray) -> int:
    h = hashlib.blake2b(digest_size=8)
    h.update(hashes[-1:].tobytes() if hashes.size else b"")
    h.update(np.ascontiguousarray(tail, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest(), "little")


def block_keys(ex: Exchange, block_size: int, *, partial: bool) -> tuple[int, list[int]]:
    """(prompt tokens, one key per block) where equal keys mean equal prefixes. With
    ``partial``, a last incomplete block gets a key too (Mooncake); else it is left out (Weka)."""
    if ex.hash_ids is not None and ex.hash_block_size == block_size:
        n = (
            ex.usage.prompt_tokens
            if ex.usage.prompt_tokens is not None
            else len(ex.hash_ids) * block_size
        )
        want = -(-n // block_size) if partial else n // block_size
        ids = ex.hash_ids[:want]
        keys = chain_ids(ids).tolist()
        if len(keys) < want:  # a tail the source left unnamed
            keys.append(
                _tail_key(np.asarray(keys[-1:], dtype=np.uint64), np.asarray([n], dtype=np.int64))
            )
        return n, keys
    toks = exchange_tokens(ex)
    hashes = block_hashes(toks, block_size)
    keys = hashes.tolist()
    rest = toks.size - hashes.size * block_size
    if partial and rest:
        keys.append(_tail_key(hashes, toks[hashes.size * block_size :]))
    return int(toks.size), keys


class IdMapper:
    """Dense ids for block keys, in order of first appearance."""

    def __init__(self, first: int) -> None:
        self._ids: dict[int, int] = {}
        self._next = first

    def __call__(self, keys: Iterable[int]) -> list[int]:
        out = []
        for k in keys:
            v = self._ids.get(k)
            if v is None:
                v = self._ids[k] = self._next
                self._next += 1
            out.append(v)
        return out


def output_tokens(ex: Exchange) -> int:
    """``completion_tokens``; else counted from the recorded answer; else ``max_tokens``; else 0
    (the external formats have no "unknown")."""
    if ex.usage.completion_tokens is not None:
        return ex.usage.completion_tokens
    r = ex.response
    parts = [p for p in (r.text, r.reasoning) if p]
    parts.extend(str(c.get("arguments", "")) for c in r.tool_calls if isinstance(c, dict))
    if parts:
        return sum(count_tokens(p) for p in parts)
    body = ex.request
    if isinstance(body, dict):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            v = body.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
    return 0


# -- Mooncake ------------------------------------------------------------------------------


def write_mooncake(exchanges: Iterable[Exchange], path: str | os.PathLike[str], *,
                   block_size: int = MOONCAKE_BLOCK_SIZE, force: bool = True) -> int:  # fmt: skip
    """Stream model calls to a Mooncake JSONL file; returns the number of lines. The file
    replaces ``path`` once complete (an existing one only with ``force``)."""
    mapper = IdMapper(0)
    t0: int | None = None
    n = 0
    with atomic_output(path, force=force) as tmp, open(tmp, "wb") as fh:
        for ex in exchanges:
            if not is_model_call(ex):
                continue
            start = ex.timing.start_wall_ns
            t0 = start if t0 is None else t0
            length, keys = block_keys(ex, block_size, partial=True)
            row = {"timestamp": max(0, round((start - t0) / 1e6)), "input_length": length,
                   "output_length": output_tokens(ex), "hash_ids": mapper(keys)}  # fmt: skip
            fh.write(orjson.dumps(row) + b"\n")
            n += 1
    return n


# -- Weka ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Req:
    """What the Weka writer keeps of an exchange (not its body): one request row, less ``t``."""

    thread: str
    start_ns: int
    end_ns: int
    row: dict[str, Any]
    native: bool  # row["hash_ids"] are the source's own Weka ids, else dense ids of this session
    subagent: bool
    flags: tuple[str, ...]


def _input_types(ex: Exchange) -> list[str]:
    found = weka_values(ex.flags, "in")
    if found or ex.hash_ids is not None:
        return found
    conv = conversation(ex.api, ex.request)
    last = conv[-1] if conv else None
    if not isinstance(last, dict):
        return []
    if last.get("role") == "tool" or last.get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    ):
        return ["tool_result"]
    content = last.get("content")
    if isinstance(content, list):
        kinds: list[str] = [
            b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)
        ]
        names = ["text" if k in ("input_text", "output_text") else k for k in kinds]
        return list(dict.fromkeys(names))
    return ["text"]


def _output_types(ex: Exchange) -> list[str]:
    found = weka_values(ex.flags, "out")
    if found or ex.hash_ids is not None:
        return found
    r = ex.response
    out = []
    if r.reasoning:
        out.append("thinking")
    if r.text:
        out.append("text")
    if r.tool_calls:
        out.append("tool_use")
    return out


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e9, 6)


def weka_request(ex: Exchange, mapper: IdMapper) -> _Req:
    """The Weka row of one exchange; text prompts get ids from ``mapper`` (one per session)."""
    native = ex.hash_ids is not None and ex.hash_block_size == WEKA_BLOCK_SIZE
    n, keys = block_keys(ex, WEKA_BLOCK_SIZE, partial=False)
    ids = list((ex.hash_ids or ())[: len(keys)]) if native else mapper(keys)
    kind = weka_values(ex.flags, "type")
    stream = isinstance(ex.request, dict) and ex.request.get("stream") is True
    row: dict[str, Any] = {
        "t": None,
        "type": kind[0] if kind else ("s" if stream else "n"),
        "model": ex.model,
        "in": n,
        "out": output_tokens(ex),
        "hash_ids": ids,
        "input_types": _input_types(ex),
        "output_types": _output_types(ex),
        "stop": ex.response.stop_reason or "",
    }
    api_time = ex.api_time_s if ex.api_time_s is not None else _seconds(ex.timing.e2e_ns)
    if api_time is not None:
        row["api_time"] = api_time
    if ex.timing.ttft_ns is not None:
        row["ttft"] = _seconds(ex.timing.ttft_ns)
    if ex.think_time_s is not None:
        row["think_time"] = ex.think_time_s
    start = ex.timing.start_wall_ns
    return _Req(ex.thread_id, start, start + (ex.timing.e2e_ns or 0), row, native,
                FLAG_SUBAGENT in ex.flags, ex.flags)  # fmt: skip


def _timed(req: _Req, base_ns: int) -> dict[str, Any]:
    return {**req.row, "t": round((req.start_ns - base_ns) / 1e9, 6)}


def weka_document(session: str, reqs: list[_Req], origin_ns: int | None = None) -> dict[str, Any]:
    """One session as a Weka document. ``t`` counts from ``origin_ns``, by default the session's
    first request; the session's first thread is the main one, the others are subagents."""
    threads: dict[str, list[_Req]] = {}
    position = {id(r): i for i, r in enumerate(reqs)}  # ties in time keep the trace's order
    for r in reqs:
        threads.setdefault(r.thread, []).append(r)
    order = sorted(threads.values(), key=lambda rs: (any(r.subagent for r in rs), rs[0].start_ns))
    root, subs = order[0], order[1:]
    base = min(r.start_ns for r in reqs) if origin_ns is None else origin_ns
    entries = [(r.start_ns, position[id(r)], _timed(r, base)) for r in root]
    for rs in subs:
        start, flags = rs[0].start_ns, rs[0].flags
        entry: dict[str, Any] = {
            "t": round((start - base) / 1e9, 6),
            "type": "subagent",
            "agent_id": (weka_values(flags, "agent_id") or [rs[0].thread.rsplit("/", 1)[-1]])[0],
        }
        for key in ("subagent_type", "status"):
            found = weka_values(flags, key)
            if found:
                entry[key] = found[0]
        recorded = weka_values(flags, "duration_ms")  # an imported Weka subagent's own figure
        entry["duration_ms"] = (
            orjson.loads(recorded[0])
            if recorded
            else round((max(r.end_ns for r in rs) - start) / 1e6)
        )
        entry["requests"] = [_timed(r, start) for r in rs]
        entry["models"] = list(dict.fromkeys(r.row["model"] for r in rs if r.row["model"]))
        entries.append((start, position[id(rs[0])], entry))
    entries.sort(key=lambda e: (e[0], e[1]))

    def tokens_of(rs: list[_Req]) -> dict[str, int]:
        return {"input": sum(r.row["in"] for r in rs), "output": sum(r.row["out"] for r in rs)}

    parent = tokens_of(root)
    sub = tokens_of([r for rs in subs for r in rs])
    return {
        "id": session,
        "models": list(dict.fromkeys(r.row["model"] for r in root if r.row["model"])),
        "block_size": WEKA_BLOCK_SIZE,
        "hash_id_scope": "local",
        "requests": [e for _, _, e in entries],
        "totals": {
            "parent_tokens": parent,
            "subagent_tokens": sub,
            "combined_tokens": {k: parent[k] + sub[k] for k in parent},
            "subagent_count": len(subs),
        },
    }


def _finish_session(session: str, reqs: list[_Req], mapper: IdMapper) -> dict[str, Any]:
    """Imported Weka sessions keep their ids, less the per-file offset the importer added, and
    count ``t`` from their own origin (0). A session mixing imported and text rows gets dense
    ids throughout."""
    if all(r.native for r in reqs):
        ids = [i for r in reqs for i in r.row["hash_ids"]]
        low = min(ids, default=0)
        base = (low // _ID_STRIDE) * _ID_STRIDE if low >= 0 else 0
        if ids and max(ids) - base >= _ID_STRIDE:
            base = 0  # not one file's offset: keep the ids as they are
        for r in reqs:
            r.row["hash_ids"] = [i - base for i in r.row["hash_ids"]]
        start = min(r.start_ns for r in reqs)
        return weka_document(session, reqs, 0 if start >= 0 else None)
    for r in reqs:
        if r.native:  # negative keys: apart from the chained hashes of text rows
            r.row["hash_ids"] = mapper([-1 - i for i in r.row["hash_ids"]])
            r.native = False
    return weka_document(session, reqs)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def write_weka(
    exchanges: Iterable[Exchange], path: str | os.PathLike[str], *, force: bool = True
) -> int:
    """Write one Weka file per session: ``path`` is a directory, or a ``.json`` file when the
    trace holds a single session. Returns the number of sessions written. Rows are reduced to
    their Weka fields as they are read; the documents are written at the end, each replacing
    its file once complete. An existing file, or a directory already holding ``.json`` files,
    is refused unless ``force``."""
    p = Path(path)
    if p.suffix == ".json" or (p.exists() and not p.is_dir()):
        check_output(p, force=force)
    elif not force and p.is_dir() and any(p.glob("*.json")):
        raise UsageError(
            f"{p} already holds Weka files: pass --force to replace them, or choose another path"
        )
    sessions: dict[str, tuple[list[_Req], IdMapper]] = {}
    for ex in exchanges:
        if is_model_call(ex):
            reqs, mapper = sessions.setdefault(ex.session_id, ([], IdMapper(1)))
            reqs.append(weka_request(ex, mapper))
    single = p.suffix == ".json"
    if single and len(sessions) != 1:
        raise UsageError(f"{len(sessions)} sessions: a Weka file holds one; give a directory as -o")
    try:
        if not single:
            p.mkdir(parents=True, exist_ok=True)
        used: set[str] = set()
        for session, (reqs, mapper) in sessions.items():
            doc = _finish_session(session, reqs, mapper)
            if single:
                target = p
            else:
                name = _UNSAFE.sub("_", session).strip("._") or "session"
                while name in used:
                    name += "_"
                used.add(name)
                target = p / f"{name}.json"
            write_atomic(target, orjson.dumps(doc), force=True)
    except OSError as exc:
        raise TraceError(f"cannot write {p}: {exc.strerror or exc}") from None
    return len(sessions)


__all__ = [
    "MOONCAKE_BLOCK_SIZE",
    "WEKA_BLOCK_SIZE",
    "block_keys",
    "exchange_tokens",
    "output_tokens",
    "weka_document",
    "write_mooncake",
    "write_weka",
]
