"""`agentx simulate` at scale: 10K agentic requests of ~100K tokens (hash-only, block size 16).

Workload: 100 sessions x 100 turns; every prompt = a 20K-token shared system prefix + the
session's own context (80K tokens at the first turn, +200 tokens per turn), so prompts run from
100K to 120K tokens. Sessions start 3 s apart; each request runs 5 s, then 5 s of think time,
so ~50 sessions overlap. Prints, side by side in one run: building the workload, the one-pass
stack engine (every capacity at once, GPU-only and with offload), and serve-sim's KVCache
replaying one capacity on the first 1,000 requests (extrapolated per capacity to all 10K).

    .venv/bin/python scripts/bench_simulate.py [--sessions 100] [--turns 100]

With ``--trace``: ``agentx simulate TRACE --json`` on a real corpus, once per ``--agentx``
(``NAME=PATH``: an ``agentx`` executable, or a source tree run as ``python -m agentx`` with
it on ``PYTHONPATH``, e.g. a checkout before a change and this one), the versions alternating
for ``--runs`` rounds and each timeline (``--timeline replay``, the default, and
``recorded``); per run its wall time, CPU seconds, peak RSS and the load average; then the
medians side by side and whether every version printed the same bytes.

    .venv/bin/python scripts/bench_simulate.py --trace $CORPORA/w1x.parquet \\
        --agentx before=BEFORE --agentx after=. --runs 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentx.prefixcache.hashing import chain_ids
from agentx.simulate.stack import kvcache_simulate, stack_simulate
from agentx.simulate.workload import RawRequest, Workload, build_workload

BS = 16
SYSTEM_TOKENS = 20_000
FIRST_TOKENS = 80_000
TURN_TOKENS = 200


def make_raw(sessions: int, turns: int) -> list[RawRequest]:
    system = np.arange(SYSTEM_TOKENS // BS, dtype=np.int64)
    out = []
    next_id = 1 << 40
    for s in range(sessions):
        own = FIRST_TOKENS // BS + turns * TURN_TOKENS // BS
        ids = np.concatenate([system, np.arange(next_id, next_id + own, dtype=np.int64)])
        next_id += own
        for t in range(turns):
            n = SYSTEM_TOKENS + FIRST_TOKENS + t * TURN_TOKENS
            start = (s * 3 + t * 10) * 10**9
            out.append(RawRequest(chain_ids(ids[: n // BS]), n, 500, start, 5 * 10**9, str(s)))
    return out


def subset(w: Workload, n: int) -> Workload:
    return Workload(w.requests[:n], w.block_size, w.unique_blocks, w.sessions)


def _command(path: str) -> tuple[list[str], dict[str, str]]:
    """How to run one agentx: an executable, or a source tree on PYTHONPATH."""
    env = dict(os.environ)
    if Path(path).is_dir():
        env["PYTHONPATH"] = str(Path(path).resolve())
        # -P: the working directory's agentx (a checkout run from) must not shadow PYTHONPATH's
        return [sys.executable, "-P", "-m", "agentx"], env
    return [path], env


def _run_corpus(path: str, trace: Path, extra: list[str]) -> dict[str, float | str]:
    cmd, env = _command(path)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            [*cmd, "simulate", str(trace), "--json", *extra],
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        digest = hashlib.sha256(out.read()).hexdigest()[:12]
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{path}: simulate exited {os.waitstatus_to_exitcode(status)}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "load": load,
        "sha": digest,
    }


def corpus(args: argparse.Namespace) -> None:
    agentxs = [a.split("=", 1) for a in args.agentx or ["this=."]]
    timelines = {"replay": [], "recorded": ["--timeline", "recorded"]}
    runs: dict[tuple[str, str], list[dict[str, float | str]]] = {}
    print("| timeline | agentx | round | wall | CPU | peak RSS | load | output |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for timeline in args.timeline or list(timelines):
        for k in range(args.runs):
            for name, path in agentxs:  # alternating: each round runs every version once
                r = _run_corpus(path, args.trace, timelines[timeline] + args.extra)
                runs.setdefault((timeline, name), []).append(r)
                print(
                    f"| {timeline} | {name} | {k + 1} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s "
                    f"| {r['rss_mb']:.0f} MiB | {r['load']:.1f} | {r['sha']} |",
                    flush=True,
                )
    print("\nmedians:\n")
    print("| timeline | agentx | wall | CPU | peak RSS | same output as the first |")
    print("|---|---|---:|---:|---:|---|")
    for (timeline, name), rows in runs.items():
        first = runs[(timeline, agentxs[0][0])][0]["sha"]
        same = all(r["sha"] == first for r in rows)

        def med(key: str, rows: list[dict[str, float | str]] = rows) -> float:
            return statistics.median(float(r[key]) for r in rows)

        print(
            f"| {timeline} | {name} | {med('wall_s'):.1f} s | {med('cpu_s'):.1f} s "
            f"| {med('rss_mb'):.0f} MiB | {'yes' if same else 'NO'} |"
        )
    print(f"\nload average {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--reference-requests", type=int, default=1000)
    ap.add_argument("--trace", type=Path, help="a corpus: compare --agentx versions on it")
    ap.add_argument("--agentx", action="append", help="NAME=PATH (repeatable; with --trace)")
    ap.add_argument("--runs", type=int, default=1, help="rounds (with --trace)")
    ap.add_argument(
        "--timeline", action="append", choices=["replay", "recorded"], help="default: both"
    )
    ap.add_argument("extra", nargs="*", help="more simulate arguments (after --)")
    args = ap.parse_args()
    if args.trace is not None:
        corpus(args)
        return

    t0 = time.perf_counter()
    raw = make_raw(args.sessions, args.turns)
    t1 = time.perf_counter()
    w = build_workload(raw, BS)
    t2 = time.perf_counter()
    del raw
    tokens = w.prompt_tokens
    print(
        f"workload: {len(w.requests):,} requests, {tokens / 1e9:.2f}G prompt tokens, "
        f"{w.unique_blocks:,} distinct blocks; hashing {t1 - t0:.1f} s, renumbering {t2 - t1:.1f} s"
    )
    caps = [int(c) // BS for c in np.geomspace(BS, w.footprint_tokens, 60)]
    for pin in (False, True):
        t3 = time.perf_counter()
        res = stack_simulate(w, caps, 4_000_000 // BS, pin=pin)
        dt = time.perf_counter() - t3
        k = caps.index(min(caps, key=lambda c: abs(c - 1_000_000 // BS)))
        print(
            f"stack engine (pin={pin}): 60 capacities x (GPU, +4M offload) in {dt:.1f} s "
            f"({dt / len(w.requests) * 1e3:.2f} ms/request); theoretical "
            f"{res.theoretical_hit_blocks * BS / tokens:.1%}, at ~1M GPU "
            f"{res.gpu_hit_blocks[k] * BS / tokens:.1%}"
        )
    n = min(args.reference_requests, len(w.requests))
    part = subset(w, n)
    t4 = time.perf_counter()
    stack_simulate(part, [1_000_000 // BS], pin=True)
    t5 = time.perf_counter()
    kvcache_simulate(part, 1_000_000, pin=True)
    t6 = time.perf_counter()
    per_stack = (t5 - t4) / n * 1e3
    per_ref = (t6 - t5) / n * 1e3
    print(
        f"first {n:,} requests, one capacity: stack {per_stack:.2f} ms/request, KVCache replay "
        f"{per_ref:.2f} ms/request ({per_ref / per_stack:.1f}x); KVCache for all "
        f"{len(w.requests):,} requests: ~{per_ref * len(w.requests) / 1e3:.0f} s per capacity"
    )


if __name__ == "__main__":
    main()
