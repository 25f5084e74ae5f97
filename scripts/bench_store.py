"""Benchmarks of the trace store and `agentx stats` (run by `make bench`, not by the tests).

1. Storage: one 200-turn agent session growing to ~120K tokens. The trace file is compared with
   the session's unique content (every message once, plus tools, system and responses),
   zstd-compressed at the same level, and with a naive layout that stores every full request
   body (quadratic). Target: file <= 2x unique content.
2. Stats: `compute_stats` over a 10,000-request text trace (50 sessions x 200 turns), and, side
   by side on the same first 1,000 requests, the incremental hasher vs re-rendering and
   re-hashing every full request. Also a 10,000-request hash-only (Mooncake) trace.

Usage: ``python scripts/bench_store.py [--quick]``. Prints a Markdown table of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.apis import Api
from agentx.core.models import Exchange, Response, Timing, Usage
from agentx.formats import load_exchanges
from agentx.prefixcache import tokens
from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes
from agentx.store import TraceWriter
from agentx.workload.stats import compute_stats

ZSTD_LEVEL = 9  # what the store uses


def zstd_size(data: bytes) -> int:
    return len(pa.Codec("zstd", compression_level=ZSTD_LEVEL).compress(data, asbytes=True))


class TextGen:
    """Code-like text from a seeded pseudo-vocabulary: compresses like source code, never repeats."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        syl = [
            "ka",
            "to",
            "ri",
            "men",
            "sa",
            "lo",
            "ver",
            "in",
            "dex",
            "ul",
            "pro",
            "cal",
            "tor",
            "ba",
            "ne",
            "qu",
            "is",
            "ent",
            "al",
            "ob",
        ]
        self.words = sorted(
            {
                "".join(self.rng.choice(syl) for _ in range(self.rng.randint(1, 3)))
                for _ in range(4000)
            }
        )
        self.types = [
            "int",
            "str",
            "bytes",
            "float",
            "Path",
            "dict[str, Any]",
            "list[int]",
            "Decimal",
            "None",
        ]

    def w(self) -> str:
        return self.rng.choice(self.words)

    def line(self) -> str:
        r = self.rng.random()
        w = self.w
        if r < 0.12:
            return f"def {w()}_{w()}({w()}: {self.rng.choice(self.types)}, {w()}: int = {self.rng.randint(0, 99)}) -> {self.rng.choice(self.types)}:"
        if r < 0.22:
            return f"    # {' '.join(w() for _ in range(self.rng.randint(4, 12)))}"
        if r < 0.32:
            return f"    if {w()}.{w()} is None or {w()} > {self.rng.randint(0, 999)}:"
        if r < 0.40:
            return f"        return {w()}({w()}, {w()}={self.rng.random():.3f})"
        if r < 0.48:
            return f"    for {w()} in {w()}.{w()}():"
        if r < 0.52:
            return ""
        return f"    {w()} = {w()}.{w()}({w()}, {w()}[{self.rng.randint(0, 9)}])"

    def file(self, chars: int) -> str:
        out: list[str] = []
        n = 0
        while n < chars:
            line = f"{len(out) + 1:>6}\t{self.line()}"
            out.append(line)
            n += len(line) + 1
        return "\n".join(out)


def grow_session(sid: str, turns: int, chars_per_turn: int, seed: int) -> Iterator[Exchange]:
    """An Anthropic-style coding session: tools + system, then per turn one assistant tool call
    and its tool result (file contents); bodies share unchanged message objects, as a proxy
    parsing each request would not, but equal in content."""
    gen = TextGen(seed)
    system = [{"type": "text", "text": gen.file(6000), "cache_control": {"type": "ephemeral"}}]
    tools = [
        {
            "name": f"Tool{i}",
            "description": gen.file(1500),
            "input_schema": {"type": "object", "properties": {gen.w(): {"type": "string"}}},
        }
        for i in range(8)
    ]
    conv: list[Any] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Please fix the failing tests in " + gen.w()}],
        }
    ]
    for i in range(turns):
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "system": system,
            "tools": tools,
            "messages": list(conv),
            "stream": True,
        }
        call_id = f"toolu_{seed}_{i}"
        answer = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": " ".join(gen.w() for _ in range(25))},
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "Read",
                    "input": {"file_path": f"/src/{gen.w()}.py"},
                },
            ],
        }
        yield Exchange(
            request_id=f"{sid}-{i}",
            session_id=sid,
            thread_id=f"{sid}/main",
            api=Api.ANTHROPIC_MESSAGES,
            request=body,
            timing=Timing(
                start_wall_ns=i * 10**9,
                ttft_ns=5 * 10**8,
                e2e_ns=2 * 10**9,
                chunk_offsets_ns=tuple(range(5 * 10**8, 2 * 10**9, 10**8)),
            ),
            parent_request_id=f"{sid}-{i - 1}" if i else None,
            model="claude-sonnet-4-5",
            response=Response(
                text=answer["content"][0]["text"],
                tool_calls=({"id": call_id, "name": "Read", "arguments": "{}"},),
                stop_reason="tool_use",
                message=answer,
            ),
            usage=Usage(prompt_tokens=None, completion_tokens=60),
            think_time_s=0.5,
        )
        conv = [
            *conv,
            answer,
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": gen.file(chars_per_turn),
                    }
                ],
            },
        ]


def bench_storage(tmp: Path, turns: int) -> dict[str, Any]:
    path = tmp / "session.parquet"
    exchanges = list(grow_session("s", turns, 1250, seed=1))
    t0 = time.perf_counter()
    with TraceWriter(path) as w:
        for ex in exchanges:
            w.append(ex)
    write_s = time.perf_counter() - t0
    last = exchanges[-1]
    final_tokens = tokens.count_request_tokens(last.api, last.request)
    unique = orjson.dumps(last.request) + b"".join(
        orjson.dumps(ex.response.message) for ex in exchanges
    )
    naive_path = tmp / "naive.parquet"
    naive = pa.table(
        {
            "request_json": [orjson.dumps(ex.request).decode() for ex in exchanges],
            "response_json": [orjson.dumps(ex.response.message).decode() for ex in exchanges],
        }
    )
    pq.write_table(naive, naive_path, compression="zstd", compression_level=ZSTD_LEVEL)
    size = path.stat().st_size
    unique_z = zstd_size(unique)
    return {
        "turns": turns,
        "final_request_tokens": final_tokens,
        "unique_bytes": len(unique),
        "unique_zstd_bytes": unique_z,
        "trace_bytes": size,
        "ratio_vs_unique_zstd": size / unique_z,
        "naive_full_bodies_raw_bytes": sum(
            len(x) for x in naive.column("request_json").to_pylist()
        ),
        "naive_full_bodies_parquet_zstd_bytes": naive_path.stat().st_size,
        "write_s": write_s,
        "appends_per_s": turns / write_s,
    }


def write_many(path: Path, sessions: int, turns: int, chars_per_turn: int) -> int:
    """Sessions interleaved round-robin, as concurrent agents would be captured."""
    gens = [grow_session(f"s{k:03d}", turns, chars_per_turn, seed=100 + k) for k in range(sessions)]
    n = 0
    with TraceWriter(path) as w:
        for _ in range(turns):
            for g in gens:
                w.append(next(g))
                n += 1
    return n


def naive_hit_rate(exchanges: list[Exchange], bs: int) -> float:
    cache = UnboundedPrefixCache(bs)
    for ex in exchanges:
        toks = tokens.request_tokens(ex.api, ex.request)
        cache.observe(block_hashes(toks, bs), int(toks.size))
    return cache.hit_rate


def bench_stats(tmp: Path, sessions: int, turns: int) -> dict[str, Any]:
    path = tmp / "many.parquet"
    t0 = time.perf_counter()
    n = write_many(path, sessions, turns, 600)
    build_s = time.perf_counter() - t0
    tokens._encode_cached.cache_clear()
    t0, c0 = time.perf_counter(), time.process_time()
    result = compute_stats(path)
    stats_s, stats_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    # side by side on the first sessions' requests: incremental vs full re-render per request
    subset_sessions = max(1, sessions // 10)
    subset = [
        ex for ex in load_exchanges(path, shared=True) if int(ex.session_id[1:]) < subset_sessions
    ]
    from agentx.workload.stats import summarize

    tokens._encode_cached.cache_clear()
    t0 = time.perf_counter()
    inc = summarize(subset)
    inc_s = time.perf_counter() - t0
    tokens._encode_cached.cache_clear()
    t0 = time.perf_counter()
    ref = naive_hit_rate(subset, 16)
    naive_s = time.perf_counter() - t0
    inc_rate = inc.theoretical_hit_rate
    assert inc_rate is not None and abs(ref - inc_rate) < 1e-12, (ref, inc_rate)
    return {
        "requests": n,
        "sessions": sessions,
        "trace_bytes": path.stat().st_size,
        "prompt_tokens_total": result.totals.input_tokens,
        "max_prompt_tokens": result.input_tokens.max,
        "build_s": build_s,
        "stats_s": stats_s,
        "stats_cpu_s": stats_cpu_s,
        "hit_rate": result.theoretical_hit_rate,
        "subset_requests": len(subset),
        "subset_incremental_s": inc_s,
        "subset_naive_s": naive_s,
        "speedup": naive_s / inc_s,
    }


def bench_hash_only(tmp: Path, n: int) -> dict[str, Any]:
    rng = random.Random(7)
    path = tmp / "mooncake.jsonl"
    lines = []
    prefixes = [list(range(k * 1000, k * 1000 + rng.randint(4, 60))) for k in range(200)]
    for i in range(n):
        ids = list(rng.choice(prefixes)) + [10**7 + i * 100 + j for j in range(rng.randint(1, 30))]
        lines.append(
            json.dumps(
                {
                    "timestamp": i * 50,
                    "input_length": len(ids) * 512 - 100,
                    "output_length": 200,
                    "hash_ids": ids,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    t0, c0 = time.perf_counter(), time.process_time()
    result = compute_stats(path)
    return {
        "requests": result.requests,
        "stats_s": time.perf_counter() - t0,
        "stats_cpu_s": time.process_time() - c0,
        "hit_rate": result.theoretical_hit_rate,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = ap.parse_args()
    turns = 40 if args.quick else 200
    sessions, per = (10, 40) if args.quick else (50, 200)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        s = bench_storage(tmp, turns)
        st = bench_stats(tmp, sessions, per)
        h = bench_hash_only(tmp, sessions * per)
    print("## Trace store and stats (scripts/bench_store.py)\n")
    print("| figure | value |\n|---|---|")
    print(f"| session | {s['turns']} turns, final request {s['final_request_tokens']:,} tokens |")
    print(
        f"| unique content: raw / zstd-{ZSTD_LEVEL} | {s['unique_bytes'] / 1e6:.2f} MB / {s['unique_zstd_bytes'] / 1e6:.3f} MB |"
    )
    print(
        f"| **trace file (Parquet, zstd)** | **{s['trace_bytes'] / 1e6:.3f} MB = {s['ratio_vs_unique_zstd']:.2f}x unique content (zstd)** |"
    )
    print(
        f"| naive full bodies per row: raw / Parquet zstd | {s['naive_full_bodies_raw_bytes'] / 1e6:.1f} MB / {s['naive_full_bodies_parquet_zstd_bytes'] / 1e6:.2f} MB |"
    )
    print(
        f"| write (spool + compaction) | {s['write_s']:.2f} s, {s['appends_per_s']:,.0f} appends/s |"
    )
    print(
        f"| stats trace | {st['requests']:,} requests, {st['sessions']} sessions, {st['prompt_tokens_total'] / 1e6:.0f}M prompt tokens (max {st['max_prompt_tokens']:,.0f}), {st['trace_bytes'] / 1e6:.1f} MB |"
    )
    print(
        f"| **`stats` over {st['requests']:,} text requests** | **{st['stats_s']:.2f} s wall, {st['stats_cpu_s']:.2f} s CPU** (hit rate {st['hit_rate']:.3f}) |"
    )
    print(
        f"| incremental vs re-render + re-hash of every full request, first {st['subset_requests']:,} requests | {st['subset_incremental_s']:.2f} s vs {st['subset_naive_s']:.2f} s ({st['speedup']:.1f}x), same hit rate |"
    )
    print(
        f"| `stats` over {h['requests']:,} hash-only (Mooncake) requests | {h['stats_s']:.2f} s wall, {h['stats_cpu_s']:.2f} s CPU |"
    )
    print(
        f"\n(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; wall times stretch when the machine is shared)"
    )


if __name__ == "__main__":
    main()
