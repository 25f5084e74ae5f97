"""`make bench BENCH=corpus_replay`: replay on real-size agent corpora (docs/corpus.md).

Figures go in docs/benchmarks.md ("Replay on agent corpora"). Each part prints a table.

1. **synth** — synthetic text for hash-only requests, from the corpus's own sessions: the
   largest prompt of each session built cold, and every turn of a main thread one after
   another, with the incremental :class:`agentx.prefixcache.synth.ThreadText` side by side with building
   each prompt from scratch (:func:`agentx.prefixcache.synth.hash_id_text`, what replay did before).
2. **count** — the prompt-token count serve-sim makes of the same requests as replay sends them
   (one salted user message each): the piecewise encoding memo side by side with encoding each
   prompt whole (the slow path); the counts must be equal.
3. **serve-sim** — ``agentx serve-sim --fast`` with ``--profile agentx``'s sizes (as explicit
   flags, so ``--before`` can run an older agentx too) in its own process pinned to one core, fed the corpus's requests (16 sessions in flight, each sending its turns in order;
   bodies built by replay's own builder on the other core): requests/s, server CPU per request.
4. **replay** — ``agentx replay CORPUS --concurrency 64 --max-requests N --time-scale 0``
   against ``serve-sim --fast`` with the agentx profile's sizes (its own process), as a child under an
   address-space cap: seconds from launch to the first request, the client's peak RSS, wall
   time, requests/s, the bottleneck verdict. ``--before AGENTX`` runs the same step with another
   agentx install (e.g. the main branch's) for a side-by-side.

    .venv/bin/python scripts/bench_corpus_replay.py --corpus .cache/corpora/weka-1x \\
        --corpus .cache/corpora/weka-4x --before BEFORE/.venv/bin/agentx

(``BEFORE``: a checkout of the agentx to compare with, set up with ``make setup``.)

Without ``--corpus`` the bundled Weka samples are used (parts 1-3 only make sense on a corpus).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson

from agentx.core.examples import example_path
from agentx.core.models import Exchange
from agentx.prefixcache.synth import BlockTexts, ThreadText, hash_id_text, vocabulary
from agentx.prefixcache.tokens import _EncodeMemo, get_encoding, render_segments
from agentx.workload.build import BuildConfig, SynthCache, ThreadBuilder
from agentx.workload.source import open_source

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")
AGENTX = [sys.executable, "-m", "agentx"]
SMALL_GROWTH = 100  # blocks a turn adds, for the "small turn" row
BUILD = BuildConfig(api_mode="chat", model="m", extra_body={}, ignore_eos=True, live=False)


def pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {cpu})


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError):
        return 0


def loadavg() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def main_threads(corpus: Path, sessions: int) -> Iterator[list[Exchange]]:
    """The main thread of the first ``sessions`` sessions, materialised (block ids included)."""
    source = open_source(corpus)
    n = source.candidates
    selection = list(range(min(sessions, n))) if n is not None else None
    for k, session in enumerate(source.index(selection)):
        if k >= sessions:
            break
        loader = source.load_session(session)
        main = sorted(
            (m for m in session.exchanges if m.thread_id.endswith("/main")),
            key=lambda m: m.start_wall_ns,
        )
        yield [loader.exchange(m) for m in main]


def prompt(ex: Exchange) -> tuple[tuple[int, ...], int, int]:
    assert ex.hash_ids is not None and ex.usage.prompt_tokens is not None
    return ex.hash_ids, ex.usage.prompt_tokens, ex.hash_block_size or 64


# -- 1. synthetic text ------------------------------------------------------------------------------


def bench_synth(corpus: Path, sessions: int) -> None:
    vocabulary()
    cold_new: list[float] = []
    cold_old: list[float] = []
    cold_tokens: list[int] = []
    grow_new: list[float] = []  # turns whose block ids extend the previous turn's
    small_new: list[float] = []  # ... by at most SMALL_GROWTH blocks
    new_blocks = 0
    other_new: list[float] = []  # first turns and turns that rewrote history (compaction)
    turn_old: list[float] = []
    blocks = BlockTexts(64)
    for rows in main_threads(corpus, sessions):
        near = min(rows, key=lambda ex: abs((ex.usage.prompt_tokens or 0) - 100_000))
        ids, n, bs = prompt(near)
        cold_tokens.append(n)
        t0 = time.perf_counter()
        ThreadText(BlockTexts(bs)).text(ids, n)
        cold_new.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hash_id_text(ids, bs, n)
        cold_old.append(time.perf_counter() - t0)
        thread = ThreadText(blocks)
        prev: tuple[int, ...] = ()
        for ex in rows:
            ids, n, bs = prompt(ex)
            t0 = time.perf_counter()
            text = thread.text(ids, n)
            took = time.perf_counter() - t0
            full = ids[: n // bs]
            grows = bool(prev) and full[: len(prev)] == prev
            (grow_new if grows else other_new).append(took)
            if grows:
                new_blocks += len(full) - len(prev)
                if len(full) - len(prev) <= SMALL_GROWTH:
                    small_new.append(took)
            prev = full
            t0 = time.perf_counter()
            same = hash_id_text(ids, bs, n)
            turn_old.append(time.perf_counter() - t0)
            assert text == same
    print(f"\n1. synthetic text: {len(cold_new)} sessions of {corpus.name}, main threads")
    print(f"   ({loadavg()})")
    print("| | incremental (ThreadText) | from scratch (hash_id_text, before) |")
    print("|---|---:|---:|")
    print(
        f"| the prompt nearest 100K tokens of each session (mean {np.mean(cold_tokens):,.0f}), "
        f"cold: p50 / max | {ms(cold_new, 50):.1f} / {ms(cold_new, 100):.1f} ms "
        f"| {ms(cold_old, 50):.1f} / {ms(cold_old, 100):.1f} ms |"
    )
    print(
        f"| turns extending the previous one ({len(grow_new)}): p50 / p99 "
        f"| {ms(grow_new, 50):.2f} / {ms(grow_new, 99):.2f} ms "
        f"| {ms(turn_old, 50):.2f} / {ms(turn_old, 99):.2f} ms (every turn) |"
    )
    print(
        f"| ... adding at most {SMALL_GROWTH} blocks ({len(small_new)}): p50 / p99 "
        f"| {ms(small_new, 50):.2f} / {ms(small_new, 99):.2f} ms | |"
    )
    print(f"| ... per new block (mean) | {1e6 * sum(grow_new) / max(new_blocks, 1):.1f} µs | |")
    print(
        f"| first turns and rewritten histories ({len(other_new)}): p50 / p99 "
        f"| {ms(other_new, 50):.2f} / {ms(other_new, 99):.2f} ms | |"
    )


# -- 2. serve-sim's token count ---------------------------------------------------------------------


def sent_bodies(corpus: Path, sessions: int) -> Iterator[tuple[dict[str, Any], int]]:
    """(body as replay sends it, recorded input tokens), thread by thread."""
    synth = SynthCache()
    for k, rows in enumerate(main_threads(corpus, sessions)):
        builder = ThreadBuilder(BUILD, rows[0].api, synth)
        for ex in rows:
            yield orjson.loads(builder.build(ex, f"bench{k:x}").body), prompt(ex)[1]


def bench_count(corpus: Path, sessions: int) -> None:
    enc = get_encoding()
    memo = _EncodeMemo(max_tokens=16 << 20)
    fast: list[float] = []
    slow: list[float] = []
    tokens = 0
    for body, _ in sent_bodies(corpus, sessions):
        segments = render_segments("openai.chat", body)
        t0 = time.perf_counter()
        n_fast = sum(int(memo(s, "cl100k_base").size) for s in segments)
        fast.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        n_slow = sum(len(enc.encode_ordinary(s)) for s in segments)
        slow.append(time.perf_counter() - t0)
        assert n_fast == n_slow, "the memo changed a count"
        tokens += n_slow
    print(
        f"\n2. serve-sim's prompt count: {len(fast)} requests of {corpus.name}, "
        f"{tokens / len(fast):,.0f} tokens each on average; counts equal"
    )
    print(f"   ({loadavg()})")
    print("| | piecewise memo | whole prompt (before) |\n|---|---:|---:|")
    print(
        f"| CPU per request: p50 / mean | {ms(fast, 50):.1f} / {1000 * np.mean(fast):.1f} ms "
        f"| {ms(slow, 50):.1f} / {1000 * np.mean(slow):.1f} ms |"
    )


# -- 3. serve-sim's throughput ----------------------------------------------------------------------


class Process:
    def __init__(self, args: list[str], cpu: int | None = None) -> None:
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=(lambda: pin(cpu)) if cpu is not None else None,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.close()
            raise SystemExit(f"{args[3:5]} did not start")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# the agentx profile's sizes as explicit flags, for an agentx that has no --profile
AGENTX_SIZES = ["--block-size", "64", "--kv-tokens", "8388608", "--offload-tokens", "33554432"]
AGENTX_SIZES += ["--max-model-len", "1048576"]


def sim(agentx: list[str] | None = None, cpu: int | None = None) -> Process:
    cmd = [*(agentx or AGENTX), "serve-sim", "--port", "0", "--fast", *AGENTX_SIZES]
    return Process(cmd, cpu)


async def feed(url: str, corpus: Path, sessions: int, in_flight: int) -> dict[str, float]:
    queue: asyncio.Queue[list[bytes]] = asyncio.Queue()
    by_thread: dict[str, list[bytes]] = {}
    for body, _ in sent_bodies(corpus, sessions):
        salt = body["messages"][0]["content"][:12]
        by_thread.setdefault(salt, []).append(orjson.dumps(body))
    for bodies in by_thread.values():
        queue.put_nowait(bodies)
    prompt = cached = requests = 0

    async def lane(s: aiohttp.ClientSession) -> None:
        nonlocal prompt, cached, requests
        while not queue.empty():
            for raw in queue.get_nowait():
                async with s.post(url + "/v1/chat/completions", data=raw) as r:
                    data = await r.read()  # the usage chunk is the last data line but [DONE]
                    at = data.rfind(b"data: {", 0, data.rfind(b'"usage":{') + 1)
                    line = data[at + 6 : data.index(b"\n", at)]
                    usage: dict[str, Any] = orjson.loads(line).get("usage") or {}
                prompt += usage.get("prompt_tokens", 0)
                cached += (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
                requests += 1

    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(headers=headers) as s:
        t0 = time.perf_counter()
        await asyncio.gather(*(lane(s) for _ in range(in_flight)))
        wall = time.perf_counter() - t0
    return {"requests": requests, "wall": wall, "prompt": prompt, "cached": cached}


def bench_serve_sim(corpus: Path, sessions: int, before: str | None) -> None:
    print(f"\n3. serve-sim --fast (agentx profile sizes) pinned to one core, {corpus.name}")
    print(f"   ({loadavg()})")
    print(
        "| serve-sim | requests | prompt tokens per request | hit rate | requests/s (wall) "
        "| server CPU per request | requests/s one core sustains |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    pin(1)
    try:
        for name, agentx in [("this", None), *([("before", [before])] if before else [])]:
            srv = sim(agentx, cpu=0)
            try:
                c0 = cpu_s(srv.proc.pid)
                got = asyncio.run(feed(srv.url, corpus, sessions, 16))
                server_cpu = cpu_s(srv.proc.pid) - c0
            finally:
                srv.close()
            n = got["requests"]
            per = server_cpu / n
            print(
                f"| {name} | {n:.0f} | {got['prompt'] / n:,.0f} "
                f"| {got['cached'] / max(got['prompt'], 1):.3f} | {n / got['wall']:.1f} "
                f"| {1000 * per:.1f} ms | {1 / max(per, 1e-9):.0f} |"
            )
    finally:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))


# -- 4. replay end to end ---------------------------------------------------------------------------


def replay_step(
    agentx: list[str],
    corpus: Path,
    requests: int,
    cap_gb: float,
    sessions: int | None,
    scenario: str | None = None,
) -> dict[str, Any]:
    srv = sim()  # this agentx's serve-sim for both: the client is what is compared
    out = Path(tempfile.mkdtemp(prefix="agentx-bench-replay-"))
    cmd = [*agentx, "replay", str(corpus), "--endpoint", srv.url, "-o", str(out / "r")]
    cmd += ["--concurrency", "64", "--max-requests", str(requests), "--json"]
    # a scenario keeps its recorded think times (its window bounds the run); else none
    cmd += ["--scenario", scenario, "--duration", "600"] if scenario else ["--time-scale", "0"]
    cmd += ["--sessions", str(sessions)] if sessions else []
    cap = int(cap_gb * 1e9)
    peak = 0
    launched_ns = time.time_ns()
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            proc = subprocess.Popen(
                cmd,
                stdout=stdout,
                stderr=stderr,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)),
                cwd=ROOT,
            )
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                peak = max(peak, rss_bytes(proc.pid))
                time.sleep(0.1)
            wall = time.perf_counter() - t0
            stdout.seek(0)
            raw = stdout.read()
            stderr.seek(0)
            lines = stderr.read().decode(errors="replace").strip().splitlines()
    finally:
        srv.close()
    row: dict[str, Any] = {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "peak_rss": max(peak, usage.ru_maxrss * 1024),
    }
    try:
        summary = orjson.loads(raw)
        from agentx.store.results import read_requests

        records = read_requests(out / "r" / "requests.parquet")
        first = min(r.start_wall_ns for r in records)
        row["first_s"] = (first - launched_ns) / 1e9
        row["warmup"] = summary["requests"].get("warmup", 0)
        row["ok"] = summary["requests"]["ok"]
        row["errors"] = summary["requests"]["errors"]
        row["rps"] = summary["throughput"]["requests_per_s"]
        row["hit"] = summary["cache"]["reported_hit_rate"]
        row["verdict"] = (summary.get("bottleneck") or {}).get("bottleneck", "n/a")
        row["ttft_p50_ms"] = summary["latency_ms"]["ttft"]["p50"]
    except (orjson.JSONDecodeError, OSError, KeyError, ValueError) as exc:
        row["error"] = (lines[-1][:120] if lines else type(exc).__name__).replace("|", "/")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return row


def bench_replay(
    corpora: list[Path],
    before: str | None,
    requests: int,
    cap_gb: float,
    sessions: int | None,
    scenario: str | None = None,
) -> None:
    how = f"--scenario {scenario} --duration 600" if scenario else "--time-scale 0"
    print(
        f"\n4. replay --concurrency 64 --max-requests {requests} {how} vs serve-sim "
        f"--fast --profile agentx (own process); client capped at {cap_gb:g} GB"
    )
    print(
        "| corpus | agentx | first request after launch | client peak RSS | wall | requests ok "
        "| req/s | TTFT p50 | hit rate | bottleneck | load |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for corpus in corpora:
        runs = [("this", AGENTX)] + ([("before", [before])] if before else [])
        for name, agentx in runs:
            load = loadavg().removeprefix("load average ")
            r = replay_step(agentx, corpus, requests, cap_gb, sessions, scenario)
            if "error" in r:
                print(
                    f"| {corpus.name} | {name} | exit {r['exit']} ({r['error']}) after "
                    f"{r['wall_s']:.1f} s | {r['peak_rss'] / 2**30:.2f} GiB | | | | | | | {load} |"
                )
                continue
            print(
                f"| {corpus.name} | {name} | {r['first_s']:.1f} s | {r['peak_rss'] / 2**30:.2f} GiB "
                f"| {r['wall_s']:.1f} s | {r['ok']}/{r['ok'] + r['errors']} ({r['warmup']} warm-up) "
                f"| {r['rps']:.1f} "
                f"| {r['ttft_p50_ms']:.0f} ms | {r['hit']:.3f} | {r['verdict']} | {load} |"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", help="Weka directory (repeatable)")
    ap.add_argument("--sessions", type=int, default=8, help="sessions for parts 1-3 [8]")
    ap.add_argument("--requests", type=int, default=200, help="replay --max-requests [200]")
    ap.add_argument("--cap-gb", type=float, default=4.0, help="client RLIMIT_AS [4]")
    ap.add_argument("--before", help="another agentx executable for part 4 side by side")
    ap.add_argument("--replay-sessions", type=int, help="replay --sessions N in part 4")
    ap.add_argument("--replay-scenario", help="replay --scenario in part 4 (e.g. agentx)")
    ap.add_argument("--parts", default="synth,count,serve-sim,replay")
    args = ap.parse_args()
    corpora = args.corpus or [example_path("weka")]
    parts = set(args.parts.split(","))
    first = corpora[0]
    if "synth" in parts:
        bench_synth(first, args.sessions)
    if "count" in parts:
        bench_count(first, args.sessions)
    if "serve-sim" in parts:
        bench_serve_sim(first, args.sessions, args.before)
    if "replay" in parts:
        bench_replay(
            corpora,
            args.before,
            args.requests,
            args.cap_gb,
            args.replay_sessions,
            args.replay_scenario,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
