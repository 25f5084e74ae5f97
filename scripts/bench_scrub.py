"""Scrub streams: peak memory does not grow with the trace.

Generates two agentx traces of the same kind of sessions, one ``--scale`` times larger than the
other (Anthropic tool-use sessions with a 12K-token system+tools prefix, multi-KB tool results,
a secret in some sessions, and injected faults: errors, retries, title side calls), then runs
``agentx scrub`` on each in a child process and reports wall time, exchanges/s, MB/s of trace and
the child's peak RSS, side by side. A streaming scrub shows a peak-RSS ratio near 1 while the
size ratio is ``--scale``. Run with ``--no-hit-rate`` too, to separate the report's unbounded
hit-rate cache (which holds one hash per distinct block of the trace).

    .venv/bin/python scripts/bench_scrub.py [--sessions 300] [--scale 4] [--turns 40] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from agentx.apis import Api  # noqa: E402
from agentx.core.models import Exchange, Response, Timing, Usage  # noqa: E402
from agentx.store import TraceWriter  # noqa: E402

WORDS = [
    "the",
    "parser",
    "returns",
    "none",
    "when",
    "input",
    "is",
    "empty",
    "so",
    "the",
    "caller",
    "fails",
    "later",
    "fix",
    "it",
    "by",
    "checking",
    "length",
    "first",
    "then",
    "add",
    "a",
    "regression",
    "test",
    "for",
    "this",
    "case",
    "module",
    "import",
    "path",
]


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _blob(rng: random.Random, n_bytes: int) -> str:
    raw = rng.randbytes(n_bytes)
    lines = base64.b64encode(raw).decode()
    return "\n".join(lines[i : i + 76] for i in range(0, len(lines), 76))


def session(
    rng: random.Random, sid: str, turns: int, t0: int, system: str, tools: list[object]
) -> list[Exchange]:
    msgs: list[object] = [{"role": "user", "content": [{"type": "text", "text": _prose(rng, 40)}]}]
    if rng.random() < 0.1:
        msgs[0]["content"][0]["text"] += " token ghp_" + "".join(
            rng.choices("abcdef0123456789", k=36)
        )  # type: ignore[index]
    out: list[Exchange] = []
    t = t0
    for i in range(turns):
        body = {
            "model": "claude-sonnet-4",
            "max_tokens": 8192,
            "system": system,
            "tools": tools,
            "messages": list(msgs),
            "stream": True,
        }
        status = 529 if rng.random() < 0.01 else 200
        ex = Exchange(
            request_id=f"{sid}-{i}",
            session_id=sid,
            thread_id=f"{sid}/main",
            api=Api.ANTHROPIC_MESSAGES,
            request=body,
            timing=Timing(start_wall_ns=t, ttft_ns=500_000_000, e2e_ns=3_000_000_000),
            parent_request_id=out[-1].request_id if out else None,
            status=status,
            model="claude-sonnet-4",
            response=Response(text=_prose(rng, 30), stop_reason="tool_use"),
            usage=Usage(completion_tokens=200),
        )
        out.append(ex)
        if status != 200 or rng.random() < 0.01:  # the client retries the same body
            out.append(
                Exchange(
                    **{
                        **{f: getattr(ex, f) for f in ex.__dataclass_fields__},
                        "request_id": f"{sid}-{i}r",
                        "status": 200,
                        "timing": Timing(start_wall_ns=t + 1_000_000),
                    }
                )
            )
        t += 10_000_000_000
        tid = f"toolu_{sid}_{i}"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": ex.response.text or ""},
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Read",
                        "input": {"file_path": f"src/m{i}.py"},
                    },
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tid,
                        "content": _blob(rng, rng.randint(1500, 6000)),
                    }
                ],
            }
        )
    title = Exchange(
        request_id=f"{sid}-title",
        session_id=sid,
        thread_id=f"{sid}/title",
        api=Api.ANTHROPIC_MESSAGES,
        status=200,
        timing=Timing(start_wall_ns=t0 + 1),
        request={
            "model": "claude-haiku",
            "max_tokens": 32,
            "system": "Generate a title for this conversation.",
            "messages": [msgs[0]],
        },
    )
    return [out[0], title, *out[1:]]


def make_trace(path: Path, sessions: int, turns: int, seed: int) -> int:
    rng = random.Random(seed)
    system = _prose(rng, 3000)
    tools = [
        {"name": f"Tool{k}", "description": _prose(rng, 400), "input_schema": {"type": "object"}}
        for k in range(20)
    ]
    n = 0
    with TraceWriter(path) as w:
        # a few sessions interleaved at a time, like concurrent users
        live = 4
        for start in range(0, sessions, live):
            batch = [
                session(rng, f"s{start + k}", turns, (start + k) * 10**9, system, tools)
                for k in range(min(live, sessions - start))
            ]
            rows = sorted((e for s in batch for e in s), key=lambda e: e.timing.start_wall_ns)
            for ex in rows:
                w.append(ex)
                n += 1
    return n


def run_scrub(trace: Path, out: Path, extra: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of `agentx scrub` in a child process."""
    cmd = [sys.executable, "-m", "agentx", "scrub", str(trace), "-o", str(out), "--json", *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"scrub failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--keep", type=Path, help="keep the generated traces in this directory")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentx-bench-scrub-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = []
        for label, sessions in (
            ("1x", args.sessions),
            (f"{args.scale}x", args.sessions * args.scale),
        ):
            trace = work / f"trace-{label}.parquet"
            t0 = time.perf_counter()
            if not trace.exists():
                make_trace(trace, sessions, args.turns, seed=1)
            gen = time.perf_counter() - t0
            size = trace.stat().st_size
            from agentx.store import open_trace

            n = open_trace(trace).num_rows
            print(
                f"{label}: {sessions} sessions, {n} exchanges, {size / 1e6:.0f} MB (generated in {gen:.0f} s)",
                flush=True,
            )
            for extra in ([], ["--no-hit-rate"]):
                wall, rss = run_scrub(trace, work / f"clean-{label}.parquet", extra)
                rows.append((label, " ".join(extra) or "(default)", n, size, wall, rss))
                print(
                    f"  scrub {' '.join(extra) or '(default)'}: {wall:.1f} s, {n / wall:.0f} exchanges/s, "
                    f"{size / 1e6 / wall:.1f} MB/s, peak RSS {rss / 2**20:.0f} MiB",
                    flush=True,
                )
        print(
            "\n| trace | options | exchanges | Parquet MB | wall s | exchanges/s | peak RSS MiB |"
        )
        print("|---|---|---:|---:|---:|---:|---:|")
        for label, opts, n, size, wall, rss in rows:
            print(
                f"| {label} | {opts} | {n} | {size / 1e6:.0f} | {wall:.1f} | {n / wall:.0f} | {rss / 2**20:.0f} |"
            )
        base = {opts: (size, rss) for label, opts, _, size, _, rss in rows if label == "1x"}
        for label, opts, _, size, _, rss in rows:
            if label != "1x":
                s0, r0 = base[opts]
                print(f"{opts}: size x{size / s0:.2f}, peak RSS x{rss / r0:.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
