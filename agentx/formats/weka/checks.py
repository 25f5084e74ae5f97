"""The checks of a Weka document's values, each naming the JSON path of what it rejects: the
integer, seconds, string fields of a record, and its block ids (checked as C-level passes: a
corpus holds ~100M ids). :mod:`agentx.formats.weka.read` walks the files and builds exchanges
with them; :func:`checked_ids` serves a reader that parses a record's ids apart from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeGuard

import orjson

from agentx.core.errors import FormatError
from agentx.prefixcache.hashing import common_prefix

LOCAL_SCOPE_STRIDE = 1 << 32  # per-file id offset when a directory mixes local-scope files
_INT64 = (-(1 << 63), (1 << 63) - 1)
_MAX_SECONDS = 4e9  # t + subagent start must still fit in int64 nanoseconds


class Invalid(Exception):
    """A validation failure at a JSON path inside the document."""


def is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def int_at(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> int | None:
    v = obj.get(key)
    if v is None and not required:
        return None
    if not is_int(v) or not 0 <= v <= _INT64[1]:
        raise Invalid(f"{where}.{key}: expected a non-negative integer, got {show(v)}")
    return int(v)


def num_at(obj: dict[str, Any], key: str, where: str, *, required: bool = False) -> float | None:
    v = obj.get(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < _MAX_SECONDS:
        raise Invalid(f"{where}.{key}: expected a non-negative number of seconds, got {show(v)}")
    return float(v)


def str_at(obj: dict[str, Any], key: str, where: str) -> str | None:
    v = obj.get(key)
    if v is not None and not isinstance(v, str):
        raise Invalid(f"{where}.{key}: expected a string, got {show(v)}")
    return v


def strs_at(obj: dict[str, Any], key: str, where: str) -> list[str]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise Invalid(f"{where}.{key}: expected a list of strings, got {show(v)}")
    return v


def show(v: object) -> str:
    try:
        text = orjson.dumps(v, default=str).decode()
    except TypeError:  # integers beyond 64 bits, lone surrogates
        text = repr(v)
    if v is None:
        text = "nothing"
    return text if len(text) <= 40 else text[:37] + "..."


_IDS = {int}  # the one type a block id may have (not bool, not float)


def hash_ids_at(
    req: dict[str, Any], where: str, offset: int, prev: tuple[list[int], tuple[int, ...]] | None
) -> tuple[list[int], tuple[int, ...]]:
    """(the record's ids, as stored: plus ``offset``). ``prev`` is the previous record's pair
    in the thread: the prefix they share was checked already and reuses its stored ids (the
    same int objects, so rows share memory and compare fast). The checks are C-level passes:
    a corpus holds ~100M ids."""
    ids = req.get("hash_ids")
    if not isinstance(ids, list) or not set(map(type, ids)) <= _IDS:
        raise Invalid(f"{where}.hash_ids: expected a list of integers, got {show(ids)}")
    k = 0
    if prev is not None:
        raw = prev[0]
        k = min(len(raw), len(ids))
        if raw[:k] != ids[:k]:
            k = common_prefix(tuple(raw[:k]), tuple(ids[:k]))
    tail = ids[k:]
    if tail:
        low, high = min(tail), max(tail)
        if low < _INT64[0] or high + offset > _INT64[1]:
            raise Invalid(f"{where}.hash_ids: ids must fit in 64 bits")
        if offset and (high >= LOCAL_SCOPE_STRIDE or low < 0):
            raise Invalid(f"{where}.hash_ids: local-scope ids must be in [0, 2^32) to mix files")
    new = tuple(map(offset.__add__, tail)) if offset else tuple(tail)
    return ids, (prev[1][:k] + new if prev is not None else new)


def checked_ids(ids: object, where: str, offset: int, path: str | Path) -> tuple[int, ...]:
    """One record's ``hash_ids`` checked as the importer checks them, plus ``offset`` (for a
    reader that parses a record's ids apart from the record). Raises :class:`FormatError`
    naming ``path`` (a file, or ``file:line``)."""
    try:
        return hash_ids_at({"hash_ids": ids}, where, offset, None)[1]
    except Invalid as exc:
        raise FormatError(str(path), str(exc)) from None
