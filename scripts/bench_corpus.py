"""`make bench BENCH=corpus`: agentx on a generated real-size Weka corpus (issue 10).

Builds (or reuses) a corpus with scripts/weka_corpus (the Weka fixtures' statistics: ~68
requests per session, input p50 ~100K tokens, theoretical hit rate ~96 %), then runs each
command as a child process under a memory cap (RLIMIT_AS), a timeout and, for commands that
write, a disk watch over their output directory; a command that passes a cap is stopped and
reported as such, with how far it got. Measured per step: wall seconds, peak RSS (the child's
own ``ru_maxrss``), outcome, and the step's figures (requests, hit rate, output and spool bytes,
seconds from launch to the first replayed request).

    .venv/bin/python scripts/bench_corpus.py                       # 50 traces, every step
    .venv/bin/python scripts/bench_corpus.py --traces 700 --corpus /work/corpora/weka-1x \\
        --steps stats,convert,simulate,replay --keep /work/corpora/out/bench-1x

Steps: ``stats`` (of the JSON directory), ``convert`` (to an agentx Parquet trace),
``stats-parquet`` and ``simulate-parquet`` (of that trace, when convert finished),
``simulate`` (of the JSON directory), ``replay`` (the directory against ``serve-sim --fast`` at
``--concurrency`` lanes for ``--max-requests`` requests, think times at 0). Prints a Markdown
table for docs/benchmarks.md; ``--json FILE`` also writes the rows.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from weka_corpus import DEFAULT_SEED, ensure_corpus

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("stats", "convert", "stats-parquet", "simulate", "simulate-parquet", "replay")
AGENTX = [sys.executable, "-m", "agentx"]


@dataclass
class Step:
    name: str
    cmd: list[str]
    wall_s: float = 0.0
    peak_rss_bytes: int = 0
    outcome: str = ""  # "ok", "exit N", "stopped: ..." or "skipped: ..."
    figures: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # renamed or removed under us
                total += os.lstat(os.path.join(root, f)).st_size
    return total


def run(
    step: Step,
    *,
    mem_cap: int,
    timeout_s: float,
    watch: Path | None = None,
    disk_cap: int = 0,
) -> bytes:
    """Run ``step.cmd`` in its own session with the caps; fill in the step; return stdout."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_cap, mem_cap))

    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            step.cmd, stdout=out, stderr=err, preexec_fn=limit, start_new_session=True, cwd=ROOT
        )
        stop_reason = ""
        stop_at = 0.0
        disk_peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            if watch is not None:
                disk_peak = max(disk_peak, dir_bytes(watch))
            if not stop_reason:
                if now - t0 > timeout_s:
                    stop_reason = f"stopped: timeout {timeout_s:.0f} s"
                elif disk_cap and disk_peak > disk_cap:
                    stop_reason = f"stopped: output passed {disk_cap / 1e9:.0f} GB"
                if stop_reason:
                    os.killpg(proc.pid, signal.SIGINT)
                    stop_at = now
            elif now - stop_at > 20:
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.5)
        code = os.waitstatus_to_exitcode(status)
        step.wall_s = time.perf_counter() - t0
        step.peak_rss_bytes = usage.ru_maxrss * 1024
        step.outcome = stop_reason or ("ok" if code == 0 else f"exit {code}")
        if watch is not None:
            step.figures["disk_peak_bytes"] = disk_peak
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
        step.stderr_tail = " | ".join(tail)[-300:]
        out.seek(0)
        return out.read()


def json_figures(data: bytes, keys: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    figures: dict[str, Any] = {}
    for name, path in keys.items():
        value: Any = doc
        for k in path:
            value = value.get(k) if isinstance(value, dict) else None
        if value is not None:
            figures[name] = value
    return figures


STATS_KEYS = {
    "requests": ("requests",),
    "hit_rate": ("theoretical_hit_rate",),
    "input_p50": ("input_tokens", "p50"),
    "input_tokens": ("totals", "input_tokens"),
}
SIMULATE_KEYS = {"requests": ("requests",), "block_size": ("block_size",)}


class SimServer:
    """``agentx serve-sim --fast`` on a free port, for the replay step."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [*AGENTX, "serve-sim", "--port", "0", "--fast"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.close()
            raise SystemExit("serve-sim did not start")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def replay_step(corpus: Path, work: Path, args: argparse.Namespace, caps: dict[str, Any]) -> Step:
    results = work / "replay"
    shutil.rmtree(results, ignore_errors=True)
    server = SimServer()
    try:
        cmd = [*AGENTX, "replay", str(corpus), "--endpoint", server.url, "-o", str(results)]
        cmd += ["--concurrency", str(args.concurrency), "--max-requests", str(args.max_requests)]
        step = Step("replay", [*cmd, "--time-scale", "0", "--json"])
        launched_ns = time.time_ns()
        data = run(step, **caps)
    finally:
        server.close()
    step.figures.update(
        json_figures(data, {"requests_ok": ("requests", "ok"), "errors": ("requests", "errors")})
    )
    try:
        from agentx.store.results import read_requests

        records = read_requests(results / "requests.parquet")
        if records:
            first = min(r.start_wall_ns for r in records)
            step.figures["first_request_s"] = round((first - launched_ns) / 1e9, 1)
    except Exception as exc:  # no results: the step's outcome already says why
        step.figures["first_request_s"] = f"n/a ({type(exc).__name__})"
    return step


def fmt_figures(figures: dict[str, Any]) -> str:
    parts = []
    for k, v in figures.items():
        if k.endswith("_bytes") and isinstance(v, int):
            parts.append(f"{k[:-6]} {v / 1e6:,.0f} MB")
        elif isinstance(v, float):
            parts.append(f"{k} {v:.4g}")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=50, help="sessions in the corpus [50]")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--corpus", type=Path, help="corpus directory (reused when up to date)")
    ap.add_argument("--keep", type=Path, help="keep outputs (trace, results) in this directory")
    ap.add_argument("--steps", default=",".join(STEPS), help="comma list [all]")
    ap.add_argument("--mem-cap-gb", type=float, default=8.0, help="RLIMIT_AS per command [8]")
    ap.add_argument("--disk-cap-gb", type=float, default=15.0, help="per writing command [15]")
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="per command [1800]")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--max-requests", type=int, default=200)
    ap.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = ap.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    unknown = set(steps) - set(STEPS)
    if unknown:
        ap.error(f"unknown steps: {', '.join(sorted(unknown))} (known: {', '.join(STEPS)})")

    default_home = Path(os.environ.get("AGENTX_CORPORA", ROOT / ".cache" / "corpora"))
    corpus = args.corpus or default_home / f"weka-{args.traces}-s{args.seed}"
    t0 = time.perf_counter()
    built = ensure_corpus(corpus, args.traces, args.seed)
    json_bytes = sum(f.stat().st_size for f in corpus.glob("*.json"))
    print(
        f"corpus {corpus}: {args.traces} traces, {json_bytes / 1e6:.0f} MB JSON "
        f"({'generated' if built else 'reused'} in {time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentx-bench-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    caps: dict[str, Any] = {
        "mem_cap": int(args.mem_cap_gb * 1e9),
        "timeout_s": args.timeout_s,
    }
    trace = work / "trace.parquet"
    rows: list[Step] = []
    try:
        for name in steps:
            if name == "replay":
                step = replay_step(corpus, work, args, caps)
            elif name.endswith("-parquet") and not trace.is_file():
                step = Step(name, [], outcome="skipped: no converted trace")
            elif name == "convert":
                for stale in work.glob("trace.parquet*"):
                    stale.unlink()
                step = Step(name, [*AGENTX, "convert", str(corpus), "-o", str(trace), "--json"])
                run(step, watch=work, disk_cap=int(args.disk_cap_gb * 1e9), **caps)
                if trace.is_file():
                    step.figures["output_bytes"] = trace.stat().st_size
            else:
                source = trace if name.endswith("-parquet") else corpus
                command = name.removesuffix("-parquet")
                step = Step(name, [*AGENTX, command, str(source), "--json"])
                data = run(step, **caps)
                step.figures.update(
                    json_figures(data, STATS_KEYS if command == "stats" else SIMULATE_KEYS)
                )
            rows.append(step)
            print(
                f"{step.name}: {step.outcome}, {step.wall_s:.1f} s, peak RSS "
                f"{step.peak_rss_bytes / 2**20:,.0f} MiB; {fmt_figures(step.figures)}"
                + (f"\n   stderr: {step.stderr_tail}" if step.outcome != "ok" else ""),
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n| step ({args.traces} traces, {json_bytes / 1e6:.0f} MB JSON) | outcome | wall s ",
        end="",
    )
    print("| peak RSS MiB | figures |\n|---|---|---:|---:|---|")
    for s in rows:
        print(
            f"| {s.name} | {s.outcome} | {s.wall_s:.1f} | {s.peak_rss_bytes / 2**20:,.0f} "
            f"| {fmt_figures(s.figures)} |"
        )
    if args.json:
        args.json.write_bytes(orjson.dumps([asdict(s) for s in rows], option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
