"""Print a captured trace one row per call: api, session, thread, parent, flags, sizes, timing."""

from __future__ import annotations

import sys

from agentx.store import read_trace


def main(path: str) -> None:
    rows = sorted(read_trace(path), key=lambda e: e.timing.start_wall_ns)
    for ex in rows:
        b = ex.request if isinstance(ex.request, dict) else {}
        conv = b.get("messages") or b.get("input") or b.get("contents") or []
        n = len(conv) if isinstance(conv, list) else "str"
        think = f"{ex.think_time_s:.2f}s" if ex.think_time_s is not None else "-"
        ttft = f"{ex.timing.ttft_ns / 1e6:.0f}ms" if ex.timing.ttft_ns is not None else "-"
        print(
            f"{ex.request_id} {ex.api:18} {ex.path[:28]:28} sess={ex.session_id[:8] or '-':8} "
            f"thread={ex.thread_id[-6:] or '-':6} parent={(ex.parent_request_id or '-')[-6:]:6} "
            f"items={n!s:3} tools={len(b.get('tools') or [])!s:2} model={ex.model} agent={ex.agent} "
            f"status={ex.status} ttft={ttft} think={think} flags={','.join(ex.flags) or '-'}"
        )
    threads = {(r.session_id, r.thread_id) for r in rows if r.thread_id}
    print(
        f"{len(rows)} rows, {len({r.session_id for r in rows if r.thread_id})} sessions, {len(threads)} threads"
    )


if __name__ == "__main__":
    main(sys.argv[1])
