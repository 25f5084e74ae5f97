"""Capture overhead: time to first token through `agentx capture` vs direct, side by side.

Three processes on loopback: a scripted SSE upstream, `agentx capture` (reverse mode, writing a
real trace), and this client. Requests alternate direct / proxied on two keep-alive
connections, so both paths see the same machine state. Reports the added TTFT (p50/p99) and
whether the proxy preserved chunk timing (inter-arrival gaps, events glued together).

    .venv/bin/python scripts/bench_capture.py [--requests 300] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GAP_MS = 20.0
EVENTS = 20


def serve_upstream(port_file: str) -> None:
    from aiohttp import web

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = int(body.get("events", EVENTS))
        gap = float(body.get("gap_ms", 0)) / 1000
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(n):
            if i and gap:
                await asyncio.sleep(gap)
            chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": f"tok{i} "}}]}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


def one(
    conn: http.client.HTTPConnection, events: int, gap_ms: float
) -> tuple[float, list[float], int]:
    """(ttft_ms, arrival times of reads in ms, reads that held more than one event)."""
    body = json.dumps(
        {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
            "events": events,
            "gap_ms": gap_ms,
        }
    )
    t0 = time.perf_counter()
    conn.request(
        "POST", "/v1/chat/completions", body=body, headers={"content-type": "application/json"}
    )
    resp = conn.getresponse()
    ttft = None
    arrivals: list[float] = []
    glued = 0
    while True:
        data = resp.read1(65536)
        if not data:
            break
        t = (time.perf_counter() - t0) * 1000
        if ttft is None and b"tok" in data:
            ttft = t
        arrivals.append(t)
        if data.count(b"data:") > 1:
            glued += 1
    assert ttft is not None
    return ttft, arrivals, glued


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve-upstream", metavar="PORT_FILE")
    args = ap.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return

    tmp = Path(tempfile.mkdtemp(prefix="agentx-bench-"))
    port_file = tmp / "port"
    up = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(port_file)])
    cap: subprocess.Popen[bytes] | None = None
    plain: subprocess.Popen[bytes] | None = None
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.02)
        up_port = int(port_file.read_text())
        proxy_port = _free_port()
        agentx = Path(sys.executable).with_name("agentx")
        cap = subprocess.Popen(
            [
                str(agentx),
                "capture",
                "--upstream",
                f"http://127.0.0.1:{up_port}",
                "--port",
                str(proxy_port),
                "--out",
                str(tmp / "bench.parquet"),
                "--confdir",
                str(tmp / "conf"),
                "--no-status",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        plain_port = _free_port()
        plain = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("mitmdump")),
                "-q",
                "--mode",
                f"reverse:http://127.0.0.1:{up_port}",
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(plain_port),
                "--set",
                f"confdir={tmp / 'conf-plain'}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        direct = http.client.HTTPConnection("127.0.0.1", up_port, timeout=30)
        proxied = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
        deadline = time.monotonic() + 30
        while True:
            try:
                one(proxied, 1, 0)
                break
            except (ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise
                proxied = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
                time.sleep(0.1)
        baseline = _connect(plain_port)
        for _ in range(20):  # warm-up
            one(direct, 3, 0)
            one(proxied, 3, 0)
            one(baseline, 3, 0)

        ttft_d: list[float] = []
        ttft_p: list[float] = []
        ttft_b: list[float] = []
        for i in range(args.requests):  # rotate the order: no path always goes first
            trio = [(direct, ttft_d), (proxied, ttft_p), (baseline, ttft_b)]
            for conn, sink in trio[i % 3 :] + trio[: i % 3]:
                sink.append(one(conn, 3, 0)[0])
        added = [p - d for p, d in zip(ttft_p, ttft_d, strict=True)]
        added_plain = [b - d for b, d in zip(ttft_b, ttft_d, strict=True)]
        baseline.close()

        gaps_d: list[float] = []
        gaps_p: list[float] = []
        glued_d = glued_p = 0
        for _ in range(args.streams):
            _, a, g = one(direct, EVENTS, GAP_MS)
            gaps_d += [b - x for x, b in itertools.pairwise(a)][: EVENTS - 1]
            glued_d += g
            _, a, g = one(proxied, EVENTS, GAP_MS)
            gaps_p += [b - x for x, b in itertools.pairwise(a)][: EVENTS - 1]
            glued_p += g
        proxied.close()
        direct.close()
    finally:
        if cap is not None:
            cap.send_signal(signal.SIGINT)
            cap.wait(60)
        if plain is not None:
            plain.terminate()
            plain.wait(10)
        up.terminate()
        up.wait(10)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from agentx.store import read_trace

    rows = read_trace(tmp / "bench.parquet")
    trace_gaps = [
        (b - a) / 1e6
        for r in rows
        if len(r.timing.chunk_offsets_ns) >= EVENTS
        for a, b in list(
            zip(r.timing.chunk_offsets_ns, r.timing.chunk_offsets_ns[1:], strict=False)
        )[: EVENTS - 1]
    ]
    result = {
        "requests": args.requests,
        "ttft_ms": {
            "direct": {"p50": pct(ttft_d, 0.5), "p99": pct(ttft_d, 0.99)},
            "proxied": {"p50": pct(ttft_p, 0.5), "p99": pct(ttft_p, 0.99)},
            "plain_mitmdump": {"p50": pct(ttft_b, 0.5), "p99": pct(ttft_b, 0.99)},
            "added_by_plain_mitmdump": {
                "p50": pct(added_plain, 0.5),
                "p99": pct(added_plain, 0.99),
            },
            "added": {
                "p50": pct(added, 0.5),
                "p99": pct(added, 0.99),
                "mean": statistics.fmean(added),
            },
        },
        "chunk_gaps_ms": {
            "sent": GAP_MS,
            "direct": {"p1": pct(gaps_d, 0.01), "p50": pct(gaps_d, 0.5), "p99": pct(gaps_d, 0.99)},
            "proxied": {"p1": pct(gaps_p, 0.01), "p50": pct(gaps_p, 0.5), "p99": pct(gaps_p, 0.99)},
            "in_trace": {
                "p1": pct(trace_gaps, 0.01),
                "p50": pct(trace_gaps, 0.5),
                "p99": pct(trace_gaps, 0.99),
            }
            if trace_gaps
            else None,
            "glued_reads": {"direct": glued_d, "proxied": glued_p},
        },
        "trace_rows": len(rows),
        "expected_rows": 1 + 20 + args.requests + args.streams,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    t, g = result["ttft_ms"], result["chunk_gaps_ms"]
    print(
        f"capture overhead, {args.requests} alternating requests on loopback ({os.cpu_count()} CPUs)"
    )
    print(f"  TTFT direct   p50 {t['direct']['p50']:.2f} ms  p99 {t['direct']['p99']:.2f} ms")
    print(f"  TTFT proxied  p50 {t['proxied']['p50']:.2f} ms  p99 {t['proxied']['p99']:.2f} ms")
    b = t["plain_mitmdump"]
    print(
        f"  TTFT mitmdump p50 {b['p50']:.2f} ms  p99 {b['p99']:.2f} ms  (plain mitmdump, no addon)"
    )
    a = t["added_by_plain_mitmdump"]
    print(f"  added by plain mitmdump  p50 {a['p50']:.2f} ms  p99 {a['p99']:.2f} ms")
    print(
        f"  added by agentx capture  p50 {t['added']['p50']:.2f} ms  p99 {t['added']['p99']:.2f} ms  (target <= 3 / <= 10)"
    )
    print(
        f"  chunk gaps (sent every {GAP_MS:.0f} ms): direct p1/p50/p99 {g['direct']['p1']:.1f}/{g['direct']['p50']:.1f}/{g['direct']['p99']:.1f} ms,"
        f" proxied {g['proxied']['p1']:.1f}/{g['proxied']['p50']:.1f}/{g['proxied']['p99']:.1f} ms"
    )
    if g["in_trace"]:
        print(
            f"  gaps recorded in the trace p1/p50/p99 {g['in_trace']['p1']:.1f}/{g['in_trace']['p50']:.1f}/{g['in_trace']['p99']:.1f} ms"
        )
    print(
        f"  reads holding >1 event: direct {g['glued_reads']['direct']}, proxied {g['glued_reads']['proxied']}"
    )
    print(f"  trace rows {result['trace_rows']} (expected {result['expected_rows']})")


def _connect(port: int) -> http.client.HTTPConnection:
    deadline = time.monotonic() + 30
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            one(conn, 1, 0)
            return conn
        except (ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    main()
