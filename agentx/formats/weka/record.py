"""A Weka request record <-> an exchange, and what ``import_fields`` keeps for an exact export.

:func:`record_of` is the record the exporter writes for an exchange. The importer calls it on
each exchange it builds and stores only where the source record differs (a ``t`` that does not
survive nanoseconds, a missing ``model``, an unknown key) — usually nothing — so
``agentx convert --to weka`` gives every imported record back exactly (JSON-equal).

Keys of ``Exchange.import_fields`` set by the Weka importer:

- ``weka_file`` (a session's first row): the file's top-level object with ``requests`` as
  ``null`` (``id``, ``models`` in their order, ``tool_tokens``, ``system_tokens``, ``totals``,
  ``hash_id_scope``, ``block_size`` and any other key);
- ``weka_id_offset`` (same row, when not 0): what the importer added to every block id;
- ``weka_empty`` (same row): ``[[position, entry], ...]``, subagent entries without requests;
- ``weka_entry`` (a subagent thread's first row): its entry with ``requests`` as ``null``
  (``t``, ``agent_id``, ``duration_ms``, ``total_tokens``, ``tool_use_count``, ``models``, ...);
- ``weka_request``: ``{"set": {key: value}, "drop": [key]}``, where the record differs from
  :func:`record_of`;
- ``weka_pos`` / ``weka_entry_pos``: the record's / entry's index in its list, only in
  sessions whose file order is not the time order the export would otherwise use;
- ``weka_inner_absolute`` (a subagent thread's first row): its records' ``t`` count from the
  trace's start, not from the entry's ``t`` (newer captures).
"""

from __future__ import annotations

from typing import Any

from agentx.core.flags import weka_values
from agentx.core.models import JSON, Exchange

FILE = "weka_file"
ID_OFFSET = "weka_id_offset"
EMPTY = "weka_empty"
ENTRY = "weka_entry"
REQUEST = "weka_request"
POSITION = "weka_pos"
ENTRY_POSITION = "weka_entry_pos"
ABSOLUTE = "weka_inner_absolute"  # a subagent whose records' t count from the trace's start
REQUESTS = "requests"  # the key of a file's or an entry's list of records


def seconds(ns: int | None) -> float | None:
    """Nanoseconds as the seconds a Weka record holds (microsecond precision)."""
    return None if ns is None else round(ns / 1e9, 6)


def to_ns(s: float) -> int:
    return round(s * 1e9)


def record_of(
    ex: Exchange,
    base_ns: int,
    *,
    n_in: int,
    out: int,
    ids: list[int],
    input_types: list[str],
    output_types: list[str],
) -> dict[str, Any]:
    """The Weka record of ``ex``, its ``t`` counted from ``base_ns``, before any stored
    difference is applied (:func:`apply`)."""
    kind = weka_values(ex.flags, "type")
    stream = isinstance(ex.request, dict) and ex.request.get("stream") is True
    rec: dict[str, Any] = {
        "t": seconds(ex.timing.start_wall_ns - base_ns),
        "type": kind[0] if kind else ("s" if stream else "n"),
        "model": ex.model,
        "in": n_in,
        "out": out,
        "hash_ids": ids,
        "input_types": input_types,
        "output_types": output_types,
        "stop": ex.response.stop_reason or "",
    }
    api_time = ex.api_time_s if ex.api_time_s is not None else seconds(ex.timing.e2e_ns)
    if api_time is not None:
        rec["api_time"] = api_time
    if ex.timing.ttft_ns is not None:
        rec["ttft"] = seconds(ex.timing.ttft_ns)
    if ex.think_time_s is not None:
        rec["think_time"] = ex.think_time_s
    return rec


def _same(a: JSON, b: JSON) -> bool:
    """JSON-equal: 1 and 1.0 are the same number, but never the same as true."""
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def diff(original: dict[str, Any], rebuilt: dict[str, Any]) -> dict[str, Any] | None:
    """What turns ``rebuilt`` into ``original`` (block ids aside), or ``None`` if nothing."""
    changed = {
        k: v
        for k, v in original.items()
        if k != "hash_ids" and (k not in rebuilt or not _same(v, rebuilt[k]))
    }
    dropped = [k for k in rebuilt if k not in original]
    out: dict[str, Any] = {}
    if changed:
        out["set"] = changed
    if dropped:
        out["drop"] = dropped
    return out or None


def request_fields(
    req: dict[str, Any],
    ex: Exchange,
    base_ns: int,
    n_in: int,
    out: int,
    types: tuple[list[str], list[str]],
) -> dict[str, Any]:
    """The ``import_fields`` of the record ``req`` imported as ``ex``: where it differs from
    :func:`record_of` (``types``: its input and output types), usually nothing."""
    rebuilt = record_of(
        ex, base_ns, n_in=n_in, out=out, ids=[], input_types=types[0], output_types=types[1]
    )
    different = diff(req, rebuilt)
    return {} if different is None else {REQUEST: different}


def apply(rebuilt: dict[str, Any], stored: JSON) -> dict[str, Any]:
    if not isinstance(stored, dict):
        return rebuilt
    drop = set(stored.get("drop") or ())
    rec = {k: v for k, v in rebuilt.items() if k not in drop}
    rec.update(stored.get("set") or {})
    return rec


def imported(ex: Exchange, key: str) -> JSON:
    """``ex.import_fields[key]``, or ``None``."""
    fields = ex.import_fields
    return fields.get(key) if isinstance(fields, dict) else None
