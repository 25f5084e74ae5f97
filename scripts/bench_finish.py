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
this checkout's agentx.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, help="default: the bundled example trace")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--agentx", action="append", help="NAME=PATH (repeatable)")
    ap.add_argument("--sim-agentx", default=str(ROOT / ".venv/bin/agentx"), help="serve-sim's")
    args = ap.parse_args()
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
