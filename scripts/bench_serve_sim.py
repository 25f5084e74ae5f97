"""serve-sim benchmarks (run by `make bench`; figures go in docs/benchmarks.md, "serve-sim").

1. ``--fast`` ceiling: streamed tokens/s delivered with the server pinned to one core (the
   client to the other), at 1, 8 and 64 concurrent streams, read by an aiohttp client that
   splits lines (as an SSE client must) and by one that only counts bytes (the cheapest
   possible); and tokens per server CPU-second, which does not depend on the client.
2. Modelled mode at load: N concurrent streams at the default decode model; delivered
   inter-token latency vs the modelled one, and server CPU use.
3. Big prompts vs running streams: the largest gap a running stream sees while 100K-token
   prompts (new text, so tokenized cold) arrive, side by side with the same streams alone.
4. Hundreds of ~95K-token agent requests (growing conversations) in ``--fast`` mode: requests/s
   and server CPU per request with the default KV capacity (the sessions do not fit: LRU
   thrashes) and with one that holds them all.

Usage: .venv/bin/python scripts/bench_serve_sim.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Server:
    def __init__(self, args: Sequence[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentx", "serve-sim", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=lambda: pin(0),
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise SystemExit("serve-sim did not start")

    def cpu_s(self) -> float:
        return cpu_s(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            print("   (serve-sim ignored SIGTERM for 10 s; killed)", file=sys.stderr)
            self.proc.kill()
            self.proc.wait()


async def stream(
    session: aiohttp.ClientSession, url: str, body: dict[str, object], gaps: list[float] | None
) -> int:
    """One streamed chat completion; returns content chunks; appends inter-chunk gaps."""
    n = 0
    last: float | None = None
    async with session.post(url + "/v1/chat/completions", json=body) as resp:
        async for line in resp.content:
            if b'"content":"' in line and b'"content":""' not in line:
                n += 1
                if gaps is not None:
                    now = time.perf_counter()
                    if last is not None:
                        gaps.append(now - last)
                    last = now
    return n


async def stream_counting(
    session: aiohttp.ClientSession, url: str, body: dict[str, object], _: object = None
) -> int:
    """The cheapest possible client: counts token chunks in raw bytes, parses nothing."""
    pattern = b'"content":"'
    n = 0
    tail = b""  # shorter than the pattern, so no occurrence is counted twice
    async with session.post(url + "/v1/chat/completions", json=body) as resp:
        async for data in resp.content.iter_any():
            buf = tail + data
            n += buf.count(pattern)
            tail = buf[-(len(pattern) - 1) :]
    return n - 1  # the opening chunk carries the role and an empty "content"


def chat(tokens: int, text: str = "hi") -> dict[str, object]:
    return {
        "messages": [{"role": "user", "content": text}],
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
    }


async def ceiling(
    args: list[str], concurrency: int, tokens: int, requests: int, counting: bool
) -> tuple[float, float, float]:
    """Delivered tokens/s, tokens per server CPU-second, server CPU % of one core."""
    srv = Server(args)
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as s:
            await stream(s, srv.url, chat(10), None)  # warm up
            queue = iter(range(requests))
            c0, t0 = srv.cpu_s(), time.perf_counter()

            async def lane() -> int:
                got = 0
                read = stream_counting if counting else stream
                for _ in queue:
                    got += await read(s, srv.url, chat(tokens), None)
                return got

            total = sum(await asyncio.gather(*(lane() for _ in range(concurrency))))
            wall, server_cpu = time.perf_counter() - t0, srv.cpu_s() - c0
        return total / wall, total / max(server_cpu, 1e-9), 100 * server_cpu / wall
    finally:
        srv.close()


async def modelled_load(streams: int, tokens: int) -> dict[str, float]:
    srv = Server([])
    try:
        gaps: list[float] = []
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            await stream(s, srv.url, chat(5), None)
            c0, t0 = srv.cpu_s(), time.perf_counter()
            got = await asyncio.gather(
                *(stream(s, srv.url, chat(tokens), gaps) for _ in range(streams))
            )
            wall, server_cpu = time.perf_counter() - t0, srv.cpu_s() - c0
        modelled = (1 + 0.015 * (streams - 1)) / 60.0
        gaps.sort()
        return {
            "modelled_itl_ms": modelled * 1000,
            "itl_p50_ms": statistics.median(gaps) * 1000,
            "itl_p99_ms": gaps[int(0.99 * (len(gaps) - 1))] * 1000,
            "server_cpu_pct": 100 * server_cpu / wall,
            "tokens_per_cpu_s": sum(got) / max(server_cpu, 1e-9),
        }
    finally:
        srv.close()


def big_prompt(tokens: int) -> str:
    """~``tokens`` of real Python source (aiohttp's), with a unique first line: cold to the
    tokenizer's memo and to the prefix cache."""
    src = "".join(p.read_text() for p in sorted(Path(aiohttp.__file__).parent.glob("*.py")))
    return f"# {uuid.uuid4().hex}\n" + src[: tokens * 46 // 10]  # ~4.6 chars per token


async def stall(streams: int, big: int, big_tokens: int) -> tuple[float, float, float, int]:
    """Max gap of running streams alone, then with ``big`` cold prompts arriving one by one."""
    srv = Server(["--decode-tps", "50", "--prefill-tps", "1e9"])
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            await stream(s, srv.url, chat(5), None)
            alone: list[float] = []
            await asyncio.gather(*(stream(s, srv.url, chat(150), alone) for _ in range(streams)))
            texts = [big_prompt(big_tokens) for _ in range(big)]
            mixed: list[float] = []
            latencies: list[float] = []
            prompt_tokens = 0

            async def bigs() -> None:
                nonlocal prompt_tokens
                await asyncio.sleep(0.3)
                for text in texts:
                    body = {**chat(1, text), "stream": False}
                    t0 = time.perf_counter()
                    async with s.post(srv.url + "/v1/chat/completions", json=body) as r:
                        data = await r.json()
                    latencies.append(time.perf_counter() - t0)
                    prompt_tokens = data["usage"]["prompt_tokens"]

            await asyncio.gather(
                bigs(), *(stream(s, srv.url, chat(150), mixed) for _ in range(streams))
            )
        return max(alone) * 1000, max(mixed) * 1000, statistics.mean(latencies), prompt_tokens
    finally:
        srv.close()


async def agent_sessions(
    kv_tokens: int, sessions: int, turns: int, concurrency: int
) -> tuple[int, float, float, float, float]:
    """Coding-agent-shaped load in --fast mode: ``sessions`` conversations of ~90K tokens
    that grow by a turn per request. Returns requests, mean prompt tokens, hit rate,
    requests/s and server CPU ms per request."""
    srv = Server(["--fast", "--kv-tokens", str(kv_tokens)])
    try:
        convs = [[{"role": "system", "content": big_prompt(90_000)}] for _ in range(sessions)]
        turn_text = big_prompt(turns * 500)
        bodies: list[dict[str, object]] = []
        for turn in range(turns):
            for msgs in convs:
                msgs.append({"role": "user", "content": turn_text[turn * 2000 : (turn + 1) * 2000]})
                bodies.append({"messages": list(msgs), "max_tokens": 10})
                msgs.append({"role": "assistant", "content": "done " * 50})
        usages: list[dict[str, object]] = []
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            gate = asyncio.Semaphore(concurrency)

            async def one(body: dict[str, object]) -> None:
                async with gate, s.post(srv.url + "/v1/chat/completions", json=body) as r:
                    usages.append((await r.json())["usage"])

            c0, t0 = srv.cpu_s(), time.perf_counter()
            await asyncio.gather(*(one(b) for b in bodies))
            wall, server_cpu = time.perf_counter() - t0, srv.cpu_s() - c0
        prompt = sum(int(u["prompt_tokens"]) for u in usages)  # type: ignore[call-overload]
        cached = sum(int(u["prompt_tokens_details"]["cached_tokens"]) for u in usages)  # type: ignore[index]
        n = len(bodies)
        return n, prompt / n, cached / prompt, n / wall, 1000 * server_cpu / n
    finally:
        srv.close()


async def main(quick: bool) -> None:
    pin(1)
    print("serve-sim benchmarks (server pinned to CPU 0, client to CPU 1)")
    print("\n1. --fast loopback ceiling, 1000-token streams")
    print(
        f"{'client':>10} {'streams':>8} {'tokens/s':>10} {'server CPU':>11} {'tok/server-CPU-s':>17}"
    )
    fast_cpu_tps = 0.0
    for client, counting in (("lines", False), ("bytes", True)):
        for c in (1, 8, 64):
            tps, cpu_tps, pct = await ceiling(["--fast"], c, 1000, 200 if quick else 800, counting)
            fast_cpu_tps = max(fast_cpu_tps, cpu_tps)
            print(f"{client:>10} {c:>8} {tps:>10,.0f} {pct:>10.0f}% {cpu_tps:>17,.0f}")
    n = 64 if quick else 256
    print(f"\n2. modelled decode, {n} concurrent streams of 200 tokens (defaults)")
    r = await modelled_load(n, 200)
    print(
        f"   modelled ITL {r['modelled_itl_ms']:.1f} ms | delivered p50 {r['itl_p50_ms']:.1f} ms,"
        f" p99 {r['itl_p99_ms']:.1f} ms | server CPU {r['server_cpu_pct']:.0f}% of one core"
    )
    print(
        f"   {r['tokens_per_cpu_s']:,.0f} tokens per server CPU-s written one per chunk:"
        f" --fast is {fast_cpu_tps / r['tokens_per_cpu_s']:.0f}x cheaper per token"
    )
    big = 2 if quick else 5
    print(f"\n3. 50 running streams (50 tok/s) while {big} cold ~100K-token prompts arrive")
    alone_ms, mixed_ms, per_big, n = await stall(50, big, 100_000)
    print(
        f"   max stream gap alone {alone_ms:.0f} ms | with big prompts {mixed_ms:.0f} ms"
        f" ({mixed_ms / alone_ms:.1f}x) | a {n:,}-token prompt takes {per_big:.2f} s end to end"
    )
    sessions, turns = (4, 10) if quick else (10, 20)
    print(
        f"\n4. {sessions} agent sessions x {turns} turns of ~95K-token prompts, 16 in flight, --fast"
    )
    print(f"{'kv-tokens':>10} {'requests':>9} {'hit rate':>9} {'req/s':>7} {'server CPU/req':>15}")
    for kv in (163_840, 2_000_000):
        n, _mean, hit, rps, cpu_ms = await agent_sessions(kv, sessions, turns, 16)
        print(f"{kv:>10,} {n:>9} {hit:>9.3f} {rps:>7.1f} {cpu_ms:>12.1f} ms")


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv[1:]))
