"""The replay client's RSS over a long run: does it grow with the requests it has finished?

Starts ``agentx serve-sim`` (``--fast`` unless ``--decode-tps`` is given, with ``--profile
agentx``), then runs ``AGENTX replay TRACE --endpoint URL --concurrency C --max-requests N
--time-scale 0 --json`` as a child, once per ``--agentx`` (e.g. main's install and this
checkout's, side by side), and samples every 0.25 s the RSS of the child and every process
below it (workers, the theoretical pass) summed, and the requests the server
has finished (its ``vllm:request_success_total``). Prints, per agentx, the RSS when the server
had finished each ``--at`` count, when it had finished them all (the lanes' end), the peak
until then, and the peak of the whole run (the results written at the end included); then the
same run's peaks per process: the theoretical pass's child (``agentx-theory``), the rest (the
main process, its workers, the fingerprint's short-lived child), and the main process alone.

An ``--agentx`` PATH is an ``agentx`` executable, or a checkout's directory: that checkout's
``agentx`` package run by this Python (``python -P -m agentx`` with ``PYTHONPATH`` set to it), so
two checkouts compare side by side in one venv.

serve-sim answers in few reads, so most gaps a replay measures against it are 0 (cached small
ints, cheap to hold); a real server's are all distinct. ``--row-cost N`` also writes N rows with
a real server's gaps (413 a row, the corpus's mean output, 5-40 ms each) and has each agentx's
Python read them back: the bytes one row holds in memory, as it is held after the run (and was,
before the rows were spooled, during it), and the peak RSS of building ``summary.json`` and
writing the results from them (what the end of an N-request run adds).

    .venv/bin/python scripts/bench_replay_rss.py --trace .cache/corpora/w1x.parquet \\
        --requests 12000 --at 1000,3000,10000 \\
        --agentx before=BEFORE --agentx after=.

(``BEFORE``: a checkout of the agentx to compare with, e.g. ``git worktree add BEFORE main``.)

Without arguments (``make bench BENCH=replay_rss``): the bundled example trace, 3,000 requests,
this checkout's agentx.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agentx.core.examples import example_path

ROOT = Path(__file__).resolve().parent.parent
SUCCESS = re.compile(rb"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", re.M)


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def finished(url: str) -> int:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        return int(sum(float(v) for v in SUCCESS.findall(r.read())))


def command(agentx: str) -> tuple[list[str], dict[str, str] | None, Path]:
    """(argv prefix, environment, working directory) running ``agentx``: an executable, or a
    checkout's package by this Python."""
    path = Path(agentx).resolve()
    if path.is_dir():
        env = {**os.environ, "PYTHONPATH": str(path)}
        return [sys.executable, "-P", "-m", "agentx"], env, path  # -P: not the cwd's agentx
    return [str(path)], None, ROOT


def serve_sim(agentx: str, args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    prefix, env, cwd = command(agentx)
    cmd = [*prefix, "serve-sim", "--port", "0", "--profile", "agentx"]
    cmd += ["--decode-tps", str(args.decode_tps)] if args.decode_tps else ["--fast"]
    cmd += args.sim_arg or []
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("serve-sim did not start")
    return proc, url


def run(agentx: str, sim_agentx: str, args: argparse.Namespace, at: list[int]) -> dict[str, Any]:
    sim, url = serve_sim(sim_agentx, args)
    out = Path(tempfile.mkdtemp(prefix="agentx-bench-rss-"))
    prefix, env, cwd = command(agentx)
    cmd = [*prefix, "replay", str(args.trace.resolve()), "--endpoint", url, "-o", str(out / "r")]
    cmd += ["--json"]
    cmd += ["--concurrency", str(args.concurrency), "--max-requests", str(args.requests)]
    cmd += ["--time-scale", "0", "--workers", str(args.workers)]
    base = finished(url)
    marks: dict[int, int] = {}
    lanes_end_rss = peak = peak_lanes = peak_theory = peak_rest = peak_main = 0
    t0 = time.perf_counter()
    samples = open(args.samples, "a") if args.samples else None  # noqa: SIM115
    try:
        if samples is not None:
            samples.write(f"# {agentx}\n")
        with tempfile.TemporaryFile() as stdout:
            child = subprocess.Popen(
                cmd, stdout=stdout, stderr=subprocess.DEVNULL, cwd=cwd, env=env
            )
            pids = [child.pid]
            while True:
                pid, status, _ = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    break
                pids = _tree(child.pid)  # the workers and the theoretical pass's child too
                each = {p: rss_bytes(p) for p in pids}
                rss = sum(each.values())
                peak = max(peak, rss)
                theory = sum(r for p, r in each.items() if _comm(p) == THEORY_COMM)
                peak_theory = max(peak_theory, theory)
                peak_rest = max(peak_rest, rss - theory)
                peak_main = max(peak_main, each.get(child.pid, 0))
                done = finished(url) - base
                if samples is not None:
                    by_comm = ", ".join(f"{_comm(p)} {r >> 20}" for p, r in each.items())
                    samples.write(f"{time.perf_counter() - t0:.2f} s, {done} done: {by_comm} MiB\n")
                for n in at:
                    if done >= n and n not in marks:
                        marks[n] = rss
                if not lanes_end_rss:  # the lanes' end sample included
                    peak_lanes = max(peak_lanes, rss)
                if done >= args.requests and not lanes_end_rss:
                    lanes_end_rss = rss
                time.sleep(0.25)
            wall = time.perf_counter() - t0
            stdout.seek(0)
            summary = orjson.loads(stdout.read() or b"{}")
    finally:
        if samples is not None:
            samples.close()
        sim.terminate()
        sim.wait()
        shutil.rmtree(out, ignore_errors=True)
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "marks": marks,
        "lanes_end": lanes_end_rss,
        "peak_lanes": peak_lanes,
        "peak": peak,  # the tree's (ru_maxrss is one process's)
        "peak_theory": peak_theory,
        "peak_rest": peak_rest,
        "peak_main": peak_main,
        "ok": (summary.get("requests") or {}).get("ok"),
    }


ROW_COST = """
import gc, sys, tempfile, tracemalloc
from pathlib import Path
import pyarrow as pa
from agentx.metrics.summary import RunInfo, build_summary
from agentx.report.results_dir import write_results
from agentx.store.results import read_requests


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


if sys.argv[2] == "bytes":  # what the rows hold, by tracemalloc
    tracemalloc.start()
    rows = read_requests(sys.argv[1])
    gc.collect()
    print(tracemalloc.get_traced_memory()[0] / len(rows))
    sys.exit()
rows = read_requests(sys.argv[1])
gc.collect()
pa.default_memory_pool().release_unused()  # the table read: a run reads its spool batch by batch
held = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM from here: summary.json built and the results written from the rows
run = RunInfo(endpoint="http://x", model="m", started_at="t", duration_s=100.0)
summary = build_summary(run, rows, None, [], 64)
with tempfile.TemporaryDirectory() as d:
    write_results(Path(d), summary, rows, None)
print(held, status("VmHWM:"))
"""


def row_cost_file(path: Path, n: int, gaps: int = 413) -> None:
    from agentx.core.record import RequestRecord
    from agentx.store.results import write_requests

    rng = np.random.default_rng(0)
    t0 = 1_000_000_000_000
    rows = [
        RequestRecord(
            f"0.0.{i}",
            f"w1x-{i:06d}-main-{i % 40}",
            i % 32,
            f"w1x-{i // 40:06d}",
            "main",
            i % 40,
            False,
            1_764_000_000_000_000_000 + i,
            t0 + i * 10**6,
            t0 + i * 10**6 + 5000,
            200,
            True,
            ttfb_ns=40_000_000 + i,
            ttft_ns=41_000_000 + i,
            ttfc_ns=41_000_000 + i,
            e2e_ns=9_000_000_000 + i,
            itl_ns=rng.integers(5_000_000, 40_000_000, gaps),
            prompt_tokens=90_000 + i,
            completion_tokens=gaps + 1,
            cached_tokens=80_000 + i,
            expected_prompt_tokens=90_100 + i,
            expected_completion_tokens=gaps + 1,
            theoretical_hit_tokens=80_064 + i,
        )
        for i in range(n)
    ]
    write_requests(path, rows)


def row_cost(agentx: str, path: Path) -> tuple[float, int, int]:
    """(bytes one row holds, RSS with the rows read, peak RSS of summary + results from them)
    in ``agentx``'s own Python (``-I``: its install, not this checkout; a checkout's directory:
    this Python with ``PYTHONPATH`` set to it); the bytes in a process of their own
    (tracemalloc's bookkeeping would weigh on the RSS)."""
    prefix, env, cwd = command(agentx)
    python = [sys.executable, "-P"] if env else [str(Path(prefix[0]).parent / "python"), "-I"]
    out = [
        subprocess.run(
            [*python, "-c", ROW_COST, path, part],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=cwd,
        ).stdout.split()
        for part in ("bytes", "rss")
    ]
    return float(out[0][0]), int(out[1][0]), int(out[1][1])


THEORY_COMM = "agentx-theory"  # agentx.replay.theory.PASS_PROCESS_NAME (not imported: any agentx)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    pids = [pid]
    for p in pids:
        pids.extend(_children(p))
    return pids


def replays(
    args: argparse.Namespace, agentxs: list[list[str]], sim_agentx: str, at: list[int]
) -> None:
    cols = " | ".join(f"RSS at {n:,}" for n in at)
    print(
        f"| agentx | {cols} | RSS at {args.requests:,} (lanes end) | peak of the lanes "
        "| peak (results written) | wall | ok |"
    )
    print("|---|" + "---:|" * (len(at) + 5))
    results = []
    for name, path in agentxs:
        r = run(path, sim_agentx, args, at)
        results.append((name, r))
        gib = [f"{r['marks'][n] / 2**30:.2f} GiB" if n in r["marks"] else "" for n in at]
        print(
            f"| {name} | {' | '.join(gib)} | {r['lanes_end'] / 2**30:.2f} GiB | "
            f"{r['peak_lanes'] / 2**30:.2f} GiB | "
            f"{r['peak'] / 2**30:.2f} GiB | {r['wall_s']:.0f} s | {r['ok']} (exit {r['exit']}) |",
            flush=True,
        )
    print(
        "\n| agentx | peak: the theoretical pass's child | peak: the other processes "
        "| peak: the main process alone |"
    )
    print("|---|---:|---:|---:|")
    for name, r in results:
        print(
            f"| {name} | {r['peak_theory'] / 2**30:.2f} GiB | {r['peak_rest'] / 2**30:.2f} GiB "
            f"| {r['peak_main'] / 2**30:.3f} GiB ({r['peak_main'] // 1024:,} KB) |"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, help="default: the bundled example trace")
    ap.add_argument("--requests", type=int, default=3000, help="0: only the row-cost part")
    ap.add_argument("--at", default="1000,2000", help="request counts to report RSS at")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--decode-tps", type=float, help="modelled decode (default: --fast)")
    ap.add_argument("--sim-arg", action="append", help="one more serve-sim argument")
    ap.add_argument("--agentx", action="append", help="NAME=PATH (repeatable)")
    ap.add_argument("--samples", type=Path, help="append each sample (per process RSS) here")
    ap.add_argument(
        "--row-cost", type=int, default=3000, help="rows of the row-cost part (0: none)"
    )
    args = ap.parse_args()
    args.trace = args.trace or example_path("example")
    at = [int(x) for x in args.at.split(",") if x]
    agentxs = [a.split("=", 1) for a in (args.agentx or [f"this={ROOT}"])]
    sim_agentx = str(ROOT)  # one server for every client compared: this checkout's
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.requests:
        replays(args, agentxs, sim_agentx, at)
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.row_cost:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "requests.parquet"
            row_cost_file(path, args.row_cost)
            print(
                f"\n| agentx | one row in memory (413 gaps) | RSS with {args.row_cost:,} rows "
                "read | peak RSS: summary.json and the results written from them |"
            )
            print("|---|---:|---:|---:|")
            for name, agentx in agentxs:
                b, held, peak = row_cost(agentx, path)
                print(
                    f"| {name} | {b / 1024:.1f} KB | {held / 2**30:.2f} GiB | "
                    f"{peak / 2**30:.2f} GiB |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
