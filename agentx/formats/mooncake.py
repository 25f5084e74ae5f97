"""Mooncake JSONL traces (FAST'25 ``conversation``/``toolagent`` traces, AIPerf ``mooncake_trace``).

One JSON object per line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

``timestamp`` is milliseconds since the trace start; ``hash_ids`` name blocks of 512 tokens (the
last one may be partial). Optional fields, as AIPerf reads them: ``session_id`` (also accepted:
``chat_id``, ``conversation_id``) groups lines into one session and thread, chained by
``parent_request_id``; ``delay`` (ms) is the think time before that turn; ``text_input`` is the
prompt itself (becomes an ``openai.chat`` user message). Lines without a session are sessions of
their own. Blank lines are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeGuard

import orjson

from agentx.apis import Api
from agentx.core.errors import FormatError
from agentx.core.models import Exchange, Timing, Usage
from agentx.core.progress import Progress

MOONCAKE_BLOCK_SIZE = 512
SESSION_KEYS = ("session_id", "chat_id", "conversation_id")
KNOWN_KEYS = frozenset(
    {"timestamp", "input_length", "output_length", "hash_ids", "delay", "text_input", *SESSION_KEYS}
)
_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Bad(Exception):
    pass


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _show(v: object) -> str:
    try:
        text = orjson.dumps(v, default=str).decode()
    except TypeError:  # integers beyond 64 bits, lone surrogates
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(rec: dict[str, Any], key: str) -> int | None:
    v = rec.get(key)
    if v is None:
        return None
    if not _is_int(v) or not 0 <= v <= _INT64[1]:
        raise _Bad(f"'{key}' must be a non-negative integer, got {_show(v)}")
    return int(v)


def _ms(rec: dict[str, Any], key: str) -> float | None:
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 4e12:  # ns fit int64
        raise _Bad(f"'{key}' must be a non-negative number of milliseconds, got {_show(v)}")
    return float(v)


def parse_record(rec: object, line: int, stem: str, block_size: int) -> tuple[str | None, Exchange]:
    """(session key or None, exchange without its parent) of one decoded line."""
    if not isinstance(rec, dict):
        raise _Bad(f"expected a JSON object, got {_show(rec)}")
    if not KNOWN_KEYS.intersection(rec):
        raise _Bad("none of 'input_length', 'hash_ids', 'timestamp' ...: not a Mooncake record")
    text = rec.get("text_input")
    if text is not None and not isinstance(text, str):
        raise _Bad(f"'text_input' must be a string, got {_show(text)}")
    input_length = _count(rec, "input_length")
    if input_length is None and text is None:
        raise _Bad("needs 'input_length' (or 'text_input')")
    ids = rec.get("hash_ids")
    if ids is not None:
        if not isinstance(ids, list) or not all(_is_int(x) for x in ids):
            raise _Bad(f"'hash_ids' must be a list of integers, got {_show(ids)}")
        if ids and (min(ids) < _INT64[0] or max(ids) > _INT64[1]):
            raise _Bad("'hash_ids' must fit in 64 bits")
    session: str | None = None
    for key in SESSION_KEYS:
        value = rec.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise _Bad(f"'{key}' must be a string or an integer, got {_show(value)}")
            session = str(value)
            break
    timestamp = _ms(rec, "timestamp")
    delay = _ms(rec, "delay")
    sid = session if session is not None else f"{stem}/{line}"
    ex = Exchange(
        request_id=f"{stem}/{line}",
        session_id=sid,
        thread_id=sid,
        api=Api.OPENAI_CHAT,
        request={"messages": [{"role": "user", "content": text}]} if text is not None else {},
        timing=Timing(start_wall_ns=round((timestamp or 0.0) * 1e6)),
        usage=Usage(prompt_tokens=input_length, completion_tokens=_count(rec, "output_length")),
        think_time_s=delay / 1000 if delay is not None else None,
        hash_ids=tuple(ids) if ids is not None else None,
        hash_block_size=block_size if ids is not None else None,
    )
    return session, ex


def iter_mooncake(
    path: str | os.PathLike[str],
    *,
    block_size: int = MOONCAKE_BLOCK_SIZE,
    on_bad: Callable[[FormatError], None] | None = None,
    progress: Progress | None = None,
) -> Iterator[Exchange]:
    """Stream the exchanges of a Mooncake JSONL file, in file order. A bad record raises
    :class:`FormatError`, or, with ``on_bad``, is passed to it and skipped. ``progress``
    advances in bytes read."""
    p = Path(path)
    last_in_session: dict[str, str] = {}
    prog = progress or Progress()
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed by the with below
        prog.phase(None, total=os.fstat(fh.fileno()).st_size, unit="B")
    except OSError as exc:
        raise FormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            prog.advance(len(raw))
            if not raw.strip():
                continue
            try:
                try:
                    rec = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise _Bad(f"not valid JSON ({exc})") from None
                session, ex = parse_record(rec, line_no, p.stem, block_size)
            except _Bad as exc:
                bad = FormatError(str(p), str(exc), record=line_no)
                if on_bad is None:
                    raise bad from None
                on_bad(bad)
                continue
            if session is not None:
                parent = last_in_session.get(session)
                last_in_session[session] = ex.request_id
                if parent is not None:
                    ex = _with_parent(ex, parent)
            yield ex


def _with_parent(ex: Exchange, parent: str) -> Exchange:
    from dataclasses import replace

    return replace(ex, parent_request_id=parent)
