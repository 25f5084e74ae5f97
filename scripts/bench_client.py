"""Client throughput benchmark: how many SSE chunks per second can one client core consume?

    .venv/bin/python scripts/bench_client.py [--streams 64] [--chunks 1000] [--repeat 3]

A loopback server (its own process, pinned to the last core) answers every POST with a
vLLM-shaped chat-completions stream of ``--chunks`` events over chunked transfer encoding. Each
client runs in a fresh process pinned to core 0 and opens ``--streams`` concurrent streams; the
figure is chunks consumed per wall second (and per CPU second) with the same work done per chunk:
timestamp per read, split events, decode each event's JSON, note TTFT/ITL and usage.

Clients, side by side in one run:
  agentx          agentx.replay.client.stream_request (httpx API on httpx-aiohttp's transport)
  vllm-bench      the loop of `vllm bench serve` (aiohttp, iter_any, str buffer, json.loads)
  httpx-default   httpx.AsyncClient's default transport (httpcore) + agentx's parser
  aiohttp-raw     plain aiohttp + agentx's parser (what the httpx layer costs on top)
  vllm-serve      the real `vllm bench serve` (output tokens/s it reports; one token per chunk
                  here), when a vLLM venv and the tiny model exist (scripts/vllm_cpu.sh install)
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLIENTS = ("agentx", "vllm-bench", "httpx-default", "aiohttp-raw", "vllm-serve")
MODEL = "bench"


# -- the loopback server ----------------------------------------------------------------------


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def build_stream(chunks: int) -> list[bytes]:
    """``chunks`` token events plus the role, finish, usage and [DONE] frames, as HTTP chunks."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    frames = [
        _event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    ]
    for i in range(chunks):
        delta = {"content": f" tok{i % 97}"}
        frames.append(
            _event(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
                    ],
                }
            )
        )
    frames.append(
        _event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    )
    usage = {"prompt_tokens": 10, "completion_tokens": chunks, "total_tokens": chunks + 10}
    usage["prompt_tokens_details"] = {"cached_tokens": 0}  # type: ignore[assignment]
    frames.append(_event({**base, "choices": [], "usage": usage}))
    frames.append(b"data: [DONE]\n\n")
    return [_chunked(f) for f in frames]


async def serve(port: int, chunks: int, per_write: int) -> None:
    frames = build_stream(chunks)
    writes = [b"".join(frames[i : i + per_write]) for i in range(0, len(frames), per_write)]
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
    )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in header.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                writer.write(head)
                for piece in writes:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)  # interleave the streams, as a batching server does
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


# -- the clients ------------------------------------------------------------------------------


BODY = json.dumps(
    {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 1000,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
).encode()


async def client_agentx(url: str, streams: int) -> int:
    from agentx.replay.client import make_stream_client, stream_request

    async with make_stream_client(url, timeout_s=60, max_connections=streams) as http:
        outs = await asyncio.gather(
            *(
                stream_request(http, "/v1/chat/completions", BODY, "openai.chat")
                for _ in range(streams)
            )
        )
    bad = [o for o in outs if not o.ok]
    if bad:
        raise SystemExit(f"agentx client errors: {bad[0].error}")
    return sum(len(o.itl_ns) + 1 for o in outs)


async def client_vllm_bench(url: str, streams: int) -> int:
    """The per-request loop of `vllm bench serve` (vllm/benchmarks/lib/endpoint_request_func.py)."""
    import aiohttp

    class Handler:
        def __init__(self) -> None:
            self.buffer = ""
            self._decoder = codecs.getincrementaldecoder("utf-8")()

        def add_chunk(self, chunk_bytes: bytes) -> list[str]:
            self.buffer += self._decoder.decode(chunk_bytes)
            messages = []
            while "\n\n" in self.buffer:
                message, self.buffer = self.buffer.split("\n\n", 1)
                message = message.strip()
                if message:
                    messages.append(message)
            if self.buffer.startswith("data: "):
                content = self.buffer.removeprefix("data: ").strip()
                if content == "[DONE]":
                    messages.append(self.buffer.strip())
                    self.buffer = ""
                elif content:
                    try:
                        json.loads(content)
                        messages.append(self.buffer.strip())
                        self.buffer = ""
                    except json.JSONDecodeError:
                        pass
            return messages

    async def one(session: aiohttp.ClientSession) -> int:
        st = time.perf_counter()
        recent = st
        itl: list[float] = []
        first = False
        async with session.post(url=url + "/v1/chat/completions", data=BODY) as response:
            handler = Handler()
            async for chunk_bytes in response.content.iter_any():
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                for message in handler.add_chunk(chunk_bytes):
                    if message.startswith(":"):
                        continue
                    chunk = message.removeprefix("data: ")
                    if chunk != "[DONE]":
                        timestamp = time.perf_counter()
                        data = json.loads(chunk)
                        if choices := data.get("choices"):
                            _ = choices[0]["delta"].get("content")
                            if not first:
                                first = True
                            else:
                                itl.append(timestamp - recent)
                            recent = timestamp
                        elif usage := data.get("usage"):
                            _ = usage.get("completion_tokens")
        return len(itl) + 1

    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    connector = aiohttp.TCPConnector(limit=streams)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        counts = await asyncio.gather(*(one(session) for _ in range(streams)))
    # vLLM's loop counts the role-only and finish frames as chunks too; count them alike
    return sum(counts)


async def client_httpx_default(url: str, streams: int) -> int:
    import httpx

    from agentx.replay.sse import ChatStreamParser

    async def one(http: httpx.AsyncClient) -> int:
        parser = ChatStreamParser()
        async with http.stream("POST", "/v1/chat/completions", content=BODY) as response:
            async for data in response.aiter_raw():
                parser.feed(data, time.perf_counter_ns())
        return len(parser.itl_ns) + 1

    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:
        counts = await asyncio.gather(*(one(http) for _ in range(streams)))
    return sum(counts)


async def client_aiohttp_raw(url: str, streams: int) -> int:
    import aiohttp

    from agentx.replay.sse import ChatStreamParser

    async def one(session: aiohttp.ClientSession) -> int:
        parser = ChatStreamParser()
        async with session.post(url + "/v1/chat/completions", data=BODY) as response:
            async for data in response.content.iter_any():
                parser.feed(data, time.perf_counter_ns())
        return len(parser.itl_ns) + 1

    connector = aiohttp.TCPConnector(limit=streams)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
        counts = await asyncio.gather(*(one(session) for _ in range(streams)))
    return sum(counts)


RUNNERS = {
    "agentx": client_agentx,
    "vllm-bench": client_vllm_bench,
    "httpx-default": client_httpx_default,
    "aiohttp-raw": client_aiohttp_raw,
}


def run_client(name: str, url: str, streams: int) -> None:
    """One measurement in this (fresh, pinned) process; prints a JSON line."""

    async def main() -> dict[str, float]:
        await RUNNERS[name](url, 1)  # warm the imports and the connection path
        cpu0, t0 = time.process_time(), time.perf_counter()
        chunks = await RUNNERS[name](url, streams)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        return {"chunks": chunks, "wall_s": wall, "cpu_s": cpu}

    if os.environ.get("BENCH_UVLOOP"):
        import uvloop

        res = uvloop.run(main())
    else:
        res = asyncio.run(main())
    print(json.dumps({"client": name, **res}), flush=True)


ROOT = Path(__file__).resolve().parent.parent
VLLM_PY = Path(os.environ.get("AGENTX_VLLM_VENV", ROOT / ".venv-vllm")) / "bin" / "python"
TINY_MODEL = ROOT / ".cache" / "tiny-llama"
_VLLM_MAIN = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def run_vllm_serve(url: str, streams: int, chunks: int) -> dict[str, float] | None:
    """`vllm bench serve` itself, pinned to core 0; None when vLLM is not installed here.

    Wall rate: the output tokens/s it reports (one token per chunk here). CPU: it spends seconds
    importing vLLM and building prompts, so its CPU per chunk is measured differentially: one
    run of ``streams`` requests and one of ``3 x streams``; the extra CPU of the second run is
    what streaming ``2 x streams x chunks`` chunks cost.
    """
    if not (VLLM_PY.exists() and (TINY_MODEL / "tokenizer.json").exists()):
        return None
    taskset = ["taskset", "-c", "0"] if sys.platform.startswith("linux") else []

    def run(prompts: int) -> tuple[float | None, float]:
        args = [
            *taskset, str(VLLM_PY), "-c", _VLLM_MAIN, "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", MODEL, "--tokenizer", str(TINY_MODEL),
            "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", str(chunks),
            "--num-prompts", str(prompts), "--max-concurrency", str(streams), "--ignore-eos",
            "--disable-tqdm",
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(args, capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        rate = None
        for line in out.stdout.splitlines():
            if line.startswith("Output token throughput (tok/s):"):
                rate = float(line.split(":")[1])
        return rate, cpu

    rate, cpu1 = run(streams)
    rate3, cpu3 = run(3 * streams)
    if rate is None or rate3 is None or cpu3 <= cpu1:
        return None
    per_chunk = (cpu3 - cpu1) / (2 * streams * chunks)
    n = float(streams * chunks)
    return {"chunks": n, "wall_s": n / rate, "cpu_s": n * per_chunk}


def _pin(cores: set[int]) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--per-write", type=int, default=16, help="SSE events per server write")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--_serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_client", help=argparse.SUPPRESS)
    ap.add_argument("--_url", help=argparse.SUPPRESS)
    args = ap.parse_args()

    ncpu = os.cpu_count() or 1
    if args._serve:
        _pin({ncpu - 1})
        asyncio.run(serve(args.port, args.chunks, args.per_write))
        return
    if args._client:
        _pin({0})
        run_client(args._client, args._url, args.streams)
        return

    port = args.port or _free_port()
    url = f"http://127.0.0.1:{port}"
    me = [sys.executable, str(Path(__file__).resolve())]
    server = subprocess.Popen(
        [
            *me,
            "--_serve",
            "--port",
            str(port),
            "--chunks",
            str(args.chunks),
            "--per-write",
            str(args.per_write),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            raise SystemExit("benchmark server did not start")
        names = [c for c in args.clients.split(",") if c]
        results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for _ in range(args.repeat):  # interleaved, so drift hits every client alike
            for name in names:
                if name == "vllm-serve":
                    if len(results[name]) >= 2:  # ~20 s a measurement: two are enough
                        continue
                    measured = run_vllm_serve(url, args.streams, args.chunks)
                    if measured is not None:
                        results[name].append(measured)
                    continue
                out = subprocess.run(
                    [*me, "--_client", name, "--_url", url, "--streams", str(args.streams)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        server.terminate()
        server.wait()

    print(
        f"{args.streams} streams x {args.chunks} chunks, {args.per_write} events per server write, "
        f"client on 1 core, median of {args.repeat} (cores: {ncpu})"
    )
    print(f"{'client':<15} {'chunks/s':>12} {'chunks/CPU-s':>13} {'vs vllm-bench':>14}")
    medians = {
        n: (
            statistics.median(r["chunks"] / r["wall_s"] for r in rs),
            statistics.median(r["chunks"] / max(r["cpu_s"], 1e-9) for r in rs),
        )
        for n, rs in results.items()
        if rs
    }
    ref = medians.get("vllm-bench", (0.0, 0.0))[0]
    for name, (rate, cpu_rate) in medians.items():
        ratio = f"{rate / ref:.2f}x" if ref else "-"
        cpu = f"{cpu_rate:,.0f}"
        print(f"{name:<15} {rate:>12,.0f} {cpu:>13} {ratio:>14}")
    if "vllm-serve" in names and "vllm-serve" not in medians:
        print(
            "vllm-serve      (skipped: no vLLM venv / tiny model; bash scripts/vllm_cpu.sh install)"
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    main()
