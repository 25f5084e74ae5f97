"""`make bench BENCH=first_request`: seconds from launch to a replay's first request, and the
client's CPU seconds spent by then, side by side with another agentx (``--before``).

Figures go in docs/benchmarks.md ("Replay on agent corpora"). One ``agentx serve-sim --fast``
(this agentx's, with the agentx profile's sizes) serves every run; each run is
``agentx replay CORPUS --concurrency 64 --max-requests N --time-scale 0 --json``. The first
request is the rows' earliest ``start_wall_ns``; the client's CPU (its own process, not the
helpers it spawns) is sampled every 20 ms and read at the last sample before that instant.
Runs alternate this / before, the order swapped every pair, so the machine's drifting load
falls on both; medians are printed with each run.

    .venv/bin/python scripts/bench_first_request.py --corpus $CORPORA/w1x.parquet \\
        --before BEFORE/.venv/bin/agentx --pairs 5

Without ``--corpus`` the bundled Weka sample is used; without ``--before`` only this agentx runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentx.core.examples import example_path
from agentx.store.results import read_requests

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")
AGENTX = [sys.executable, "-m", "agentx"]
SIZES = ["--block-size", "64", "--kv-tokens", "8388608", "--offload-tokens", "33554432"]
SIZES += ["--max-model-len", "1048576"]
SAMPLE_S = 0.02


def cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def serve_sim() -> tuple[subprocess.Popen[str], str]:
    cmd = [*AGENTX, "serve-sim", "--port", "0", "--fast", *SIZES]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("serve-sim did not start")
    return proc, url


def one_run(agentx: list[str], corpus: Path, url: str, requests: int) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="agentx-bench-first-"))
    cmd = [*agentx, "replay", str(corpus), "--endpoint", url, "-o", str(out / "r"), "--json"]
    cmd += ["--concurrency", "64", "--max-requests", str(requests), "--time-scale", "0"]
    samples: list[tuple[int, float]] = []
    launched_ns = time.time_ns()
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT
        )
        while proc.poll() is None:
            cpu = cpu_s(proc.pid)
            if cpu is not None:
                samples.append((time.time_ns(), cpu))
            time.sleep(SAMPLE_S)
        err = proc.stderr.read() if proc.stderr is not None else ""
        if proc.returncode != 0:
            return {"error": f"exit {proc.returncode}: {err.strip().splitlines()[-1:]}"}
        first = min(r.start_wall_ns for r in read_requests(out / "r" / "requests.parquet"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    before_first = [cpu for t, cpu in samples if t <= first]
    return {
        "first_s": (first - launched_ns) / 1e9,
        "cpu_s": before_first[-1] if before_first else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, help="a trace (default: the bundled Weka sample)")
    ap.add_argument("--before", help="another agentx executable, run side by side")
    ap.add_argument("--pairs", type=int, default=3, help="runs of each agentx [3]")
    ap.add_argument("--requests", type=int, default=8, help="replay --max-requests [8]")
    args = ap.parse_args()
    corpus = args.corpus or example_path("weka")
    kinds: list[tuple[str, list[str]]] = [("this", AGENTX)]
    if args.before:
        kinds.append(("before", [args.before]))
    sim, url = serve_sim()
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in kinds}
    print(f"replay {corpus.name} --concurrency 64 --max-requests {args.requests} --time-scale 0")
    print("| run | agentx | first request after launch | client CPU by then | load |")
    print("|---:|---|---:|---:|---|")
    try:
        for i in range(args.pairs):
            for name, agentx in kinds if i % 2 == 0 else kinds[::-1]:
                load = " ".join(f"{x:.1f}" for x in os.getloadavg())
                r = one_run(agentx, corpus, url, args.requests)
                results[name].append(r)
                if "error" in r:
                    print(f"| {i + 1} | {name} | {r['error']} | | {load} |")
                    continue
                cpu = "n/a" if r["cpu_s"] is None else f"{r['cpu_s']:.2f} s"
                print(f"| {i + 1} | {name} | {r['first_s']:.2f} s | {cpu} | {load} |", flush=True)
    finally:
        sim.terminate()
        sim.wait(10)
    medians: dict[str, tuple[float, float]] = {}
    for name, rows in results.items():
        ok = [r for r in rows if "error" not in r and r["cpu_s"] is not None]
        if ok:
            medians[name] = (
                statistics.median(r["first_s"] for r in ok),
                statistics.median(r["cpu_s"] for r in ok),
            )
            first, cpu = medians[name]
            print(f"| median | {name} | **{first:.2f} s** | **{cpu:.2f} s** | |")
    if "this" in medians and "before" in medians:
        (a, ac), (b, bc) = medians["this"], medians["before"]
        print(f"this / before: first request {a / b:.2f}x, client CPU by then {ac / bc:.2f}x")
    return 0 if all("error" not in r for rows in results.values() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
