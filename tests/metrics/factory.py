"""Synthetic RequestRecords for metric tests: every field explicit where a test relies on it."""

from __future__ import annotations

import itertools
from typing import Any

from agentx.core.record import RequestRecord

MS = 1_000_000
S = 1_000_000_000
_ids = itertools.count()


def rec(**kw: Any) -> RequestRecord:
    """A successful streamed request sent at ``sent_ns`` (default 0) unless told otherwise."""
    n = next(_ids)
    base: dict[str, Any] = {
        "request_id": f"r{n}",
        "source_request_id": f"s{n}",
        "lane": 0,
        "session_id": "sess",
        "thread_id": "main",
        "turn": 0,
        "warmup": False,
        "start_wall_ns": 1_700_000_000 * S,
        "scheduled_ns": 0,
        "sent_ns": 0,
        "status": 200,
        "ok": True,
    }
    base.update(kw)
    if "scheduled_ns" not in kw:
        base["scheduled_ns"] = base["sent_ns"]
    return RequestRecord(**base)


def streamed(ttft_ms: float, gaps_ms: list[float], **kw: Any) -> RequestRecord:
    """A request whose tokens arrive at ``ttft_ms`` then after each gap; e2e = the last token.

    ``completion_tokens`` defaults to one token per chunk.
    """
    ttft = int(ttft_ms * MS)
    gaps = tuple(int(g * MS) for g in gaps_ms)
    kw.setdefault("completion_tokens", len(gaps) + 1)
    return rec(ttft_ns=ttft, ttfc_ns=ttft, ttfb_ns=ttft, e2e_ns=ttft + sum(gaps), itl_ns=gaps, **kw)


def failed(error_type: str = "http", **kw: Any) -> RequestRecord:
    kw.setdefault("status", 500)
    return rec(ok=False, error_type=error_type, error="boom", **kw)
