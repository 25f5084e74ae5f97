"""`make bench BENCH=workers`: what ``--workers`` costs per streamed chunk, whole command.

The loopback SSE server of ``bench_client.py`` (its own process, pinned to the last core) answers
every request with ``--chunks`` token events. ``agentx replay TRACE --endpoint URL --model bench
--no-preflight --no-metrics --concurrency C --max-requests N --time-scale 0 --workers W --json``
runs as a child pinned to core 0, for each ``--workers`` value, with N and 4 x N requests, so
start-up cancels: the extra CPU of the longer run (the whole process tree: the parent, its
workers, the theoretical pass's child, every one reaped) over its extra chunks is the client's
CPU per chunk with W processes. If it stays flat as W grows, W cores carry W times one core's
chunks (what one many-core client reaches is then the per-core figure times its cores, while
the server keeps up); if it grows, the growth is what the processes' coordination costs.

    .venv/bin/python scripts/bench_workers.py --workers 1,2,4 --requests 256 --chunks 1000

Medians of ``--repeat`` runs; the load average is printed beside them (a shared machine).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from client_bench.loopback import MODEL, serve

ROOT = Path(__file__).resolve().parent.parent
AGENTX = [sys.executable, "-m", "agentx"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(port: int, chunks: int, ready: mp.synchronize.Event) -> None:
    import asyncio

    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[-1]})
    asyncio.run(serve(port, chunks, 16, ready.set))


def _run(url: str, trace: str, lanes: int, requests: int, workers: int) -> tuple[float, int]:
    """One replay: (client CPU-s of its whole tree, chunks streamed)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*AGENTX, "replay", trace, "--endpoint", url, "--model", MODEL, "--no-preflight"]
        cmd += ["--no-metrics", "--concurrency", str(lanes), "--max-requests", str(requests)]
        cmd += ["--time-scale", "0", "--workers", str(workers), "-o", f"{tmp}/r", "--json"]
        cores = sorted(os.sched_getaffinity(0))

        def pin() -> None:
            os.sched_setaffinity(0, {cores[0]})

        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pin
        )
        out, err = proc.communicate(timeout=1800)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"replay failed ({proc.returncode}): {err.decode()[-2000:]}")
        import orjson

        summary = orjson.loads(out)
        chunks = int(summary["tokens"]["output"])
    return usage.ru_utime + usage.ru_stime, chunks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", default="example")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--lanes", type=int, default=64)
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    port = _free_port()
    ready = mp.get_context("spawn").Event()
    srv = mp.get_context("spawn").Process(target=_server, args=(port, args.chunks, ready))
    srv.start()
    try:
        if not ready.wait(60):
            raise SystemExit("the loopback server did not start")
        url = f"http://127.0.0.1:{port}"
        print(f"load average at start: {os.getloadavg()[0]:.1f}")
        print("| --workers | client CPU per chunk (us) | chunks per client CPU-s | runs |")
        print("|---:|---:|---:|---:|")
        for w in (int(x) for x in args.workers.split(",")):
            per_chunk = []
            for _ in range(args.repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                base = before.ru_utime + before.ru_stime
                cpu_n, chunks_n = _run(url, args.trace, args.lanes, args.requests, w)
                cpu_n -= base
                mid = cpu_n + base
                cpu_4n, chunks_4n = _run(url, args.trace, args.lanes, 4 * args.requests, w)
                cpu_4n -= mid
                per_chunk.append((cpu_4n - cpu_n) / (chunks_4n - chunks_n))
            us = statistics.median(per_chunk) * 1e6
            print(f"| {w} | {us:.2f} | {1e6 / us:,.0f} | {args.repeat} |")
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
    finally:
        srv.terminate()
        srv.join(10)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s")
