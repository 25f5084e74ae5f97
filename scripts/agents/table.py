"""docs/agents.md's table of agents from a `make agents` run: one row per captured agent.

    python scripts/agents/table.py OUT_DIR

OUT_DIR is run_agents.sh's: ``<agent>.parquet`` (the trace) and ``check-<agent>/check.json``
(scripts/agents/replay_check.py's figures) per agent, in the order the runs happened. A row
says what the trace holds (model calls, sessions and threads; the rows of each flag) and what
the replay sent against what the trace asked for (requests / output tokens / input tokens).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from agentx.apis import Api
from agentx.store import read_trace

SHOWN_FLAGS = (
    "non_model",
    "side_call",
    "subagent",
    "compaction",
    "fork",
    "retry",
    "history_rewritten",
    "previous_response_resolved",
    "usage_estimated",
)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def trace_cell(path: Path) -> str:
    rows = read_trace(path)
    model = [r for r in rows if r.api != Api.OTHER]
    flags: Counter[str] = Counter(f for r in rows for f in set(r.flags) if f in SHOWN_FLAGS)
    agents = sorted({r.agent or "?" for r in model})
    sessions = len({r.session_id for r in model})
    threads = len({(r.session_id, r.thread_id) for r in model})
    cell = f"{_n(len(model), 'call')}, {_n(sessions, 'session')}, {_n(threads, 'thread')}"
    if flags:
        cell += "; " + ", ".join(f"`{f}` {flags[f]}" for f in SHOWN_FLAGS if f in flags)
    return f"{cell}; agent {', '.join(agents)}"


def check_cell(path: Path) -> str:
    if not path.exists():
        return "not checked"
    c = json.loads(path.read_text())
    figures = [c[k] for k in ("requests", "output tokens", "input tokens") if k in c]
    got = " / ".join(f"{f['replay']:,}" for f in figures)
    same = all(f["replay"] == f["trace"] for f in figures) and c.get("ok")
    return f"{got} {'= trace' if same else 'MISMATCH'}"


def main(out: Path) -> None:
    traces = sorted(out.glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    print("| agent | version | trace (scripted run) | replay: requests / output / input tokens |")
    print("|---|---|---|---|")
    for trace in traces:
        check = out / f"check-{trace.stem}" / "check.json"
        version = json.loads(check.read_text()).get("version") if check.exists() else None
        print(f"| {trace.stem} | {version or '?'} | {trace_cell(trace)} | {check_cell(check)} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
