"""Turn one real agent run into a test fixture: tests/capture/fixtures/agents/<agent>.json.

    python scripts/agents/make_fixtures.py --dump DUMP.jsonl --trace T.parquet \\
        --agent NAME --version V --command "..." -o tests/capture/fixtures/agents/NAME.json

DUMP is what ``scripted_upstream.py --dump`` wrote (every request as the upstream received it:
headers with credentials already ``REDACTED``, body); T the trace agentx captured of the same
run. The fixture keeps each request's method, path, headers and body, the answer it got
(text, tool calls as the trace assembled them, usage unless it was estimated), and where the
capture placed it (``expected``: the agent, the thread and parent as indexes into the
requests, the flags), which tests/capture/test_agents.py checks a replay of the fixture against. Strings longer
than 400 characters are shortened to 160 characters and a digest of the whole (equal strings
stay equal, different ones different), so the fixtures stay small; nothing else is changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

from agentx.core.flags import FLAG_USAGE_ESTIMATED
from agentx.store import read_trace

LONG = 400
KEEP = 160


def shrink(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG:
        digest = hashlib.blake2b(value.encode(), digest_size=6).hexdigest()
        return f"{value[:KEEP]}…[{len(value)} chars {digest}]"
    if isinstance(value, dict):
        return {k: shrink(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shrink(v) for v in value]
    return value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", type=Path, required=True)
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("-o", "--out", type=Path, required=True)
    args = ap.parse_args()
    dumped = [json.loads(line) for line in args.dump.read_text().splitlines() if line.strip()]
    rows = sorted(read_trace(args.trace), key=lambda e: e.timing.start_wall_ns)
    rows = [r for r in rows if r.status != 101]  # a WebSocket upgrade: its messages are rows
    if len(rows) != len(dumped):
        raise SystemExit(f"{len(dumped)} requests dumped but {len(rows)} rows in the trace")
    requests = []
    index = {ex.request_id: i for i, ex in enumerate(rows)}
    threads: dict[str, int] = {}
    for d, ex in zip(dumped, rows, strict=True):
        u = ex.usage
        usage = None
        if FLAG_USAGE_ESTIMATED not in ex.flags and u.prompt_tokens is not None:
            usage = {
                "prompt_tokens": u.prompt_tokens,
                "cached_tokens": u.cached_tokens,
                "completion_tokens": u.completion_tokens,
            }
        requests.append(
            {
                "method": d["method"],
                "path": d["path"],
                "headers": d["headers"],
                "body": shrink(d["body"]),
                "status": ex.status,
                "answer": {
                    "text": shrink(ex.response.text),
                    "tool_calls": shrink(list(ex.response.tool_calls)),
                    "usage": usage,
                },
                "expected": {
                    "agent": ex.agent,
                    "thread": threads.setdefault(ex.thread_id, len(threads))
                    if ex.thread_id
                    else None,
                    "parent": index.get(ex.parent_request_id or ""),
                    "flags": [f for f in ex.flags if not f.startswith("replaced_chars=")],
                },
            }
        )
    for d, req in zip(dumped, requests, strict=True):  # the ids a Responses chain refers to
        prev = d["body"].get("previous_response_id") if isinstance(d["body"], dict) else None
        parent = req["expected"]["parent"]
        if prev and parent is not None:
            requests[parent]["answer"]["response_id"] = prev
    fixture = {
        "agent": args.agent,
        "version": args.version,
        "command": args.command,
        "requests": requests,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(requests)} requests")


if __name__ == "__main__":
    main()
