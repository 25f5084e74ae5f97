"""The end of a replay: how long after the last request a run takes to write its results.

Starts ``agentx serve-sim --fast --profile agentx``, then runs ``AGENTX replay TRACE --endpoint
URL --concurrency C --max-requests N --time-scale 0 --no-preflight --json`` as a child, once per
``--agentx`` (e.g. a checkout before a change and this one, side by side against the same
server). Prints, per agentx: the seconds from the end of the last request (on the client's wall
clock, from its ``requests.parquet``) to the child's exit (the finish: the theoretical pass,
``summary.json``, the results written), the whole run's
wall time, the child's CPU seconds (its children included), its peak RSS, and the figures the
finish computed (the theoretical hit rate), which agrees across versions up to the order the
lanes happened to send in.

    .venv/bin/python scripts/bench_finish.py --trace $CORPORA/w1x.parquet --requests 2000 \\
        --agentx before=BEFORE/.venv/bin/agentx --agentx after=.venv/bin/agentx

(``BEFORE``: a checkout of the agentx to compare with, set up with ``make setup``.)

Without arguments (``make bench BENCH=finish``): the bundled example trace, 2,000 requests,
this checkout's agentx; then the finish of 20,000 spooled rows, this checkout's.

The finish of many rows without a server (``--rows N``, ``--requests 0`` to skip the replay
part): writes once a spool of N rows with a real server's inter-token gaps (413 a row, 5-40 ms
each; two processes' spools, 2 % failed, the first 64 warm-up), then for each ``--checkout
NAME=DIR`` (a source tree; e.g. ``git worktree add /tmp/before main`` for the code before a
change) runs ``finish_rows`` on it in a child of this Python with that tree first on its path,
``--repeat`` times in turn: CPU seconds, wall, peak RSS (and RSS before the finish), and whether
every ``summary.json`` is the first one's (but for the client host).

    .venv/bin/python scripts/bench_finish.py --requests 0 --rows 100000 \\
        --checkout before=/tmp/before --checkout after=.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agentx.core.examples import example_path
from agentx.store.results import read_requests

ROOT = Path(__file__).resolve().parent.parent


def serve_sim(agentx: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [agentx, "serve-sim", "--port", "0", "--profile", "agentx", "--fast"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("serve-sim did not start")
    return proc, url


def run(agentx: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="agentx-bench-finish-"))
    cmd = [agentx, "replay", str(args.trace), "--endpoint", url, "-o", str(out / "r"), "--json"]
    cmd += ["--concurrency", str(args.concurrency), "--max-requests", str(args.requests)]
    cmd += ["--time-scale", "0", "--no-preflight", "--workers", str(args.workers)]
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryFile() as stdout:
            child = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL, cwd=ROOT)
            _, status, usage = os.wait4(child.pid, 0)
            exit_wall_ns, now = time.time_ns(), time.perf_counter()
            stdout.seek(0)
            summary = orjson.loads(stdout.read() or b"{}")
        rows = read_requests(out / "r" / "requests.parquet")
        last_ns = max(r.start_wall_ns + (r.e2e_ns or 0) for r in rows) if rows else None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    cache = summary.get("cache") or {}
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "finish_s": None if last_ns is None else (exit_wall_ns - last_ns) / 1e9,
        "wall_s": now - t0,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak": usage.ru_maxrss * 1024,
        "ok": (summary.get("requests") or {}).get("ok"),
        "theory": cache.get("theoretical_hit_rate"),
    }


FINISH = """
import json, resource, sys, time
from pathlib import Path
import agentx
from agentx.replay.finish import Collected, finish_rows
from agentx.results.runstart import RunStart
from agentx.results.summary.identity import ServerIdentity


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


spool, out = Path(sys.argv[1]), Path(sys.argv[2])
start = RunStart(
    started_at="2026-12-02T00:00:00Z", anchor_perf_ns=10**12, anchor_wall_ns=1_764 * 10**15,
    endpoint="http://127.0.0.1:1", model="m", server_kind="vllm",
    server_identity=ServerIdentity(), kv_tokens=1_000_000, block_size=64, lanes=32,
    concurrency=32, workers=2, api="chat", window_s=None, max_failed_ratio=0.05,
    min_coverage=None, slo="ttft_p99<=60s,itl<=30ms", tokenizer=None, trace="t.parquet",
    trace_fingerprint=None, percentiles=(95.0, 99.9),
)
rows = sorted(spool.glob("rows-*.arrows"))
span_ns = 10**12 + int(sys.argv[3]) * 10**6 + 10 * 10**9
c = Collected(
    row_spools=rows, sent_logs=[], started_ns=10**12, ended_ns=span_ns, cpu_s=50.0,
    cpu_percent_max=40.0, sessions_started=None, sessions_completed=None, live_fallbacks=0,
    interrupted=False,
)
before = status("VmRSS:")
t0, c0 = time.perf_counter(), time.process_time()
finish_rows(start, c, out, None)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rss_before": before,
                  "peak": status("VmHWM:"), "agentx": agentx.__file__}))
"""


def write_spool(spool: Path, n: int, gaps: int = 413) -> None:
    """``n`` rows in two processes' spools, as a run with a real server leaves them."""
    from agentx.core.record import RequestRecord
    from agentx.store.rowspool import RowSpool

    rng = np.random.default_rng(0)
    t0 = 10**12
    spools = [RowSpool(spool / f"rows-{w}.arrows") for w in range(2)]
    for i in range(n):
        ok = i % 50 != 7
        spools[i % 2].add(
            RequestRecord(
                f"0.0.{i}",
                f"w1x-{i:06d}-main-{i % 40}",
                i % 32,
                f"w1x-{i // 40:06d}",
                "main",
                i % 40,
                i < 64,
                1_764 * 10**15 + i * 10**6,
                t0 + i * 10**6,
                t0 + i * 10**6 + 5000,
                200 if ok else 500,
                ok,
                ttfb_ns=40_000_000 + i,
                ttft_ns=41_000_000 + i if ok else None,
                ttfc_ns=41_000_000 + i if ok else None,
                e2e_ns=9_000_000_000 + i,
                itl_ns=rng.integers(5_000_000, 40_000_000, gaps) if ok else (),
                prompt_tokens=90_000 + i if ok else None,
                completion_tokens=gaps + 1 if ok else None,
                cached_tokens=80_000 + i if ok else None,
                expected_prompt_tokens=90_100 + i,
                expected_completion_tokens=gaps + 1 + i % 3,
                theoretical_hit_tokens=80_064 + i,
                error_type=None if ok else "http",
                error=None if ok else "boom",
            )
        )
    for s in spools:
        s.close()


def finish_of(checkout: Path, spool: Path, out: Path, n: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve()), "AGENTX_PROGRESS": "off"}
    child = subprocess.run(
        [sys.executable, "-c", FINISH, str(spool), str(out), str(n)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    result: dict[str, Any] = orjson.loads(child.stdout.splitlines()[-1])
    summary = orjson.loads((out / "summary.json").read_bytes())
    summary.pop("client_host", None)
    result["summary"] = summary
    return result


def finishes(args: argparse.Namespace) -> None:
    checkouts = [c.split("=", 1) for c in (args.checkout or [f"this={ROOT}"])]
    with tempfile.TemporaryDirectory(prefix="agentx-bench-finish-rows-") as d:
        spool = Path(d) / "spool"
        spool.mkdir()
        write_spool(spool, args.rows)
        print(f"\nthe finish of {args.rows:,} spooled rows; load average {os.getloadavg()[0]:.1f}")
        print("| checkout | run | CPU | wall | RSS before | peak RSS | summary.json as the first |")
        print("|---|---:|---:|---:|---:|---:|---|")
        first: Any = None
        used: dict[str, str] = {}
        for k in range(args.repeat):
            for name, tree in checkouts:
                out = Path(d) / f"out-{name}-{k}"
                r = finish_of(Path(tree), spool, out, args.rows)
                first = r["summary"] if first is None else first
                used[name] = r["agentx"]
                print(
                    f"| {name} | {k + 1} | {r['cpu_s']:.1f} s | {r['wall_s']:.1f} s | "
                    f"{r['rss_before'] / 2**30:.2f} GiB | {r['peak'] / 2**30:.2f} GiB | "
                    f"{'identical' if r['summary'] == first else 'DIFFERENT'} |",
                    flush=True,
                )
                shutil.rmtree(out, ignore_errors=True)
        print(f"load average {os.getloadavg()[0]:.1f}")
        for name, module in used.items():
            print(f"{name}: {module}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, help="default: the bundled example trace")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--agentx", action="append", help="NAME=PATH (repeatable)")
    ap.add_argument("--sim-agentx", default=str(ROOT / ".venv/bin/agentx"), help="serve-sim's")
    ap.add_argument("--rows", type=int, default=20_000, help="spooled rows to finish (0: none)")
    ap.add_argument("--checkout", action="append", help="NAME=DIR (repeatable) for --rows")
    ap.add_argument("--repeat", type=int, default=1, help="finishes of each checkout, in turn")
    args = ap.parse_args()
    if args.requests:
        replays(args)
    if args.rows:
        finishes(args)
    return 0


def replays(args: argparse.Namespace) -> None:
    args.trace = args.trace or example_path("example")
    agentxs = [a.split("=", 1) for a in (args.agentx or [f"this={ROOT / '.venv/bin/agentx'}"])]
    sim, url = serve_sim(args.sim_agentx)  # one server for every client compared
    try:
        print(f"load average {os.getloadavg()[0]:.1f}")
        print(
            "| agentx | finish (after the last request) | run wall | CPU (children included) "
            "| peak RSS | ok | theoretical hit rate |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, path in agentxs:
            r = run(path, url, args)
            fin = "?" if r["finish_s"] is None else f"{r['finish_s']:.1f} s"
            print(
                f"| {name} | {fin} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | "
                f"{r['peak'] / 2**30:.2f} GiB | {r['ok']} (exit {r['exit']}) | {r['theory']} |",
                flush=True,
            )
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        sim.terminate()
        sim.wait()


if __name__ == "__main__":
    raise SystemExit(main())
