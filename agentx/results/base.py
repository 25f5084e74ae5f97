"""What every result schema's ``from_json`` reads with: one getter per JSON type.

A getter returns the value as the file holds it (an integer stays an ``int``, a float a
``float``), so ``to_json(from_json(x))`` writes the numbers ``x`` had; a key that is absent or
``null`` reads as ``None`` (or an empty list or object), as readers of results directories
written by an earlier agentx need; a value of the wrong type is a :class:`ShapeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentx.core.errors import ShapeError
from agentx.core.percentiles import EMPTY, P

Json = dict[str, Any]  # a JSON object as orjson writes and reads it


def bad(key: str, want: str, v: object) -> ShapeError:
    """The error of a value at ``key`` that is not ``want``."""
    return ShapeError(f"{key}: expected {want}, got {v!r}"[:200])


def obj(v: object, key: str = "value") -> Mapping[str, Any]:
    """``v`` as a JSON object."""
    if not isinstance(v, Mapping):
        raise bad(key, "an object", v)
    return v


def schema_obj(v: object, schema: str) -> Mapping[str, Any]:
    """``v`` as the top-level object of a ``schema`` file."""
    d = obj(v, "the file")
    if d.get("schema") != schema:
        raise ShapeError(f"not an {schema} object (schema: {d.get('schema')!r})")
    return d


def opt_obj(d: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    v = d.get(key)
    return None if v is None else obj(v, key)


def sub(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The object at ``key``; an empty one when absent or ``null``."""
    return opt_obj(d, key) or {}


def number(v: object, key: str) -> float:
    """``v`` as a number (an ``int`` stays one)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise bad(key, "a number", v)
    return v


def whole(v: object, key: str) -> int:
    """``v`` as an integer."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad(key, "an integer", v)
    return v


def num(d: Mapping[str, Any], key: str) -> float | None:
    v = d.get(key)
    return None if v is None else number(v, key)


def floats(d: Mapping[str, Any], key: str) -> tuple[float, ...] | None:
    """A list of numbers; ``None`` when absent or ``null``."""
    values = opt_items(d, key)
    return None if values is None else tuple(number(v, key) for v in values)


def integer(d: Mapping[str, Any], key: str) -> int | None:
    v = d.get(key)
    return None if v is None else whole(v, key)


def text(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise bad(key, "a string", v)
    return v


def flag(d: Mapping[str, Any], key: str) -> bool | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, bool):
        raise bad(key, "true or false", v)
    return v


def items(d: Mapping[str, Any], key: str) -> list[Any]:
    """The list at ``key``; empty when absent or ``null``."""
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise bad(key, "a list", v)
    return v


def pair(d: Mapping[str, Any], key: str) -> tuple[int, int] | None:
    """``[first, last]`` (a window in ns); ``None`` when absent or ``null``."""
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 2:
        raise bad(key, "[first, last]", v)
    return (whole(v[0], key), whole(v[1], key))


def opt_items(d: Mapping[str, Any], key: str) -> list[Any] | None:
    """The list at ``key``; ``None`` when absent or ``null``."""
    return None if d.get(key) is None else items(d, key)


def numbers(d: Mapping[str, Any], key: str) -> dict[str, float]:
    """An object of numbers (counter deltas, idle caps, tokens by source); empty when absent."""
    m = sub(d, key)
    for k in m:
        num(m, k)
    return dict(m)


def counts(d: Mapping[str, Any], key: str) -> dict[str, int]:
    """An object of integers (requests by API, errors by type); empty when absent."""
    m = sub(d, key)
    for k, v in m.items():
        if integer(m, k) is None:
            raise bad(k, "an integer", v)
    return dict(m)


def texts(d: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of strings (warnings, reasons, shard labels); empty when absent."""
    out = items(d, key)
    for v in out:
        if not isinstance(v, str):
            raise bad(key, "a list of strings", v)
    return tuple(out)


def free(d: Mapping[str, Any], key: str) -> Json:
    """An object agentx does not type (a run's options): kept as the file has it."""
    return dict(sub(d, key))


def need[T](v: T | None, key: str) -> T:
    """A required field's value (what a reader indexes rather than looks up)."""
    if v is None:
        raise ShapeError(f"{key}: missing")
    return v


def p_of(d: Mapping[str, Any], key: str) -> P:
    """The distribution at ``key``; every figure unknown when absent or ``null``."""
    v = opt_obj(d, key)
    return EMPTY if v is None else P.from_json(v)


def opt_p(d: Mapping[str, Any], key: str) -> P | None:
    v = opt_obj(d, key)
    return None if v is None else P.from_json(v)
