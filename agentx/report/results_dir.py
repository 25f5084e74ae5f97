"""Read a results directory (``agentx replay -o DIR``) back: summary.json and requests.parquet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from agentx.errors import AgentxError
from agentx.metrics.summary import SCHEMA
from agentx.record import RequestRecord

SUMMARY = "summary.json"
REQUESTS = "requests.parquet"


def load_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``DIR/summary.json`` (or the file itself), checked to be an ``agentx.summary/1``."""
    p = Path(path)
    f = p / SUMMARY if p.is_dir() else p
    if not f.is_file():
        raise AgentxError(f"{p}: no {SUMMARY} (not an agentx results directory)")
    try:
        summary = orjson.loads(f.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise AgentxError(f"{f}: unreadable: {exc}") from None
    if not isinstance(summary, dict) or summary.get("schema") != SCHEMA:
        got = summary.get("schema") if isinstance(summary, dict) else type(summary).__name__
        raise AgentxError(f"{f}: not an {SCHEMA} summary (schema: {got!r})")
    return summary


def load_results(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[RequestRecord]]:
    """The summary and the per-request records (empty when requests.parquet is absent)."""
    summary = load_summary(path)
    p = Path(path)
    rp = p / REQUESTS if p.is_dir() else p.with_name(REQUESTS)
    if not rp.is_file():
        return summary, []
    from agentx.store.results import read_requests

    return summary, read_requests(rp)
