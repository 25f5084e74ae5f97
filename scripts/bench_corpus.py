"""`make bench BENCH=corpus`: agentx on a generated real-size Weka corpus (docs/corpus.md).

Builds (or reuses) a corpus with scripts/weka_corpus (the Weka fixtures' statistics: ~68
requests per session, input p50 ~100K tokens, theoretical hit rate ~96 %), then runs each
command as a child process under a memory cap (RLIMIT_AS), a timeout and, for commands that
write, a disk watch over their output directory; a command that passes a cap is stopped and
reported as such, with how far it got. Measured per step: wall seconds, peak RSS (the child's
own ``ru_maxrss``), outcome, and the step's figures (requests, hit rate, output and spool bytes,
seconds from launch to the first replayed request).

    .venv/bin/python scripts/bench_corpus.py                       # 50 traces, every step
    .venv/bin/python scripts/bench_corpus.py --traces 700 --corpus .cache/corpora/weka-1x \\
        --steps stats,convert,simulate,replay --keep .cache/corpora/bench-1x

Steps: ``stats`` (of the JSON directory), ``convert`` (to an agentx Parquet trace, ``--jobs``
processes), ``convert-dataset`` (to a dataset directory, one file per source),
``stats-parquet``, ``simulate-load-parquet`` (the trace read into simulate's workload, no
sweep), ``simulate-parquet`` (the recorded timeline's one-pass sweep),
``simulate-replay-parquet`` (replay's timeline, one engine pass per capacity not derived: ~2 min on the
1x corpus) and ``export-weka`` (``convert --to weka``) of that trace, when convert finished,
``simulate`` (of the JSON directory, recorded timeline), ``replay`` (the directory against
``serve-sim --fast --profile agentx`` at ``--concurrency`` lanes for ``--max-requests``
requests, think times at 0; ``--replay-scenario agentx`` replays with the AgentX scenario's
schedule instead: snapshot start, primers, warm-up, idle caps). Writing steps report the
output's size, its ratio to the JSON, and the peak of the writer's temporary files (spools,
staged parts) and its ratio to the output. Replay reads the directory lazily (sessions when a
lane reaches them); its figures: seconds from launch to the first request, requests/s, the
server-reported hit rate and the bottleneck verdict. ``scripts/bench_corpus_replay.py`` (``make
bench BENCH=corpus_replay``) measures replay further (synthetic text, serve-sim, side by side
with another agentx).

Prints a Markdown table for docs/benchmarks.md; ``--json FILE`` also writes the rows, and
``--before FILE`` (the rows of an earlier run, e.g. of the code before a change) adds the
after/before ratios of wall time and peak RSS, side by side.
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
STEPS = (
    "stats",
    "convert",
    "convert-dataset",
    "stats-parquet",
    "simulate-load-parquet",
    "simulate",
    "simulate-parquet",
    "simulate-replay-parquet",
    "export-weka",
    "replay",
)
# simulate's loading alone (trace -> workload), without the engine's sweep
LOAD_WORKLOAD = (
    "import sys, json; from agentx.simulate.workload import load_workload; "
    "w = load_workload(sys.argv[1]); "
    "print(json.dumps({'requests': len(w.requests), 'unique_blocks': w.unique_blocks}))"
)
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


def temp_bytes(path: Path) -> int:
    """Bytes of a writer's temporary files under ``path``: spools (``*.spool``) and hidden
    staging (a name starting with a dot, e.g. convert's ``.OUT.parts.*`` directory)."""
    total = 0
    for root, _, files in os.walk(path):
        hidden = any(part.startswith(".") for part in Path(root).relative_to(path).parts)
        for f in files:
            if hidden or f.startswith(".") or f.endswith(".spool"):
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, f)).st_size
    return total


def tree_rss(session: int) -> int:
    """Resident bytes of every process of a session (the command and its workers)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == session:  # field 6, the session id
                total += int(fields[21]) * resource.getpagesize()  # field 24, rss pages
        except (OSError, IndexError, ValueError):
            continue
    return total


def run(
    step: Step,
    *,
    mem_cap: int,
    timeout_s: float,
    watch: Path | None = None,
    disk_cap: int = 0,
) -> bytes:
    """Run ``step.cmd`` in its own session with the caps; fill in the step; return stdout.
    Peak RSS is the command's own (``ru_maxrss``, which also covers its largest worker) and,
    sampled every 0.5 s, the sum over its processes (``tree_rss_peak``, for ``--jobs``)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_cap, mem_cap))

    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            step.cmd, stdout=out, stderr=err, preexec_fn=limit, start_new_session=True, cwd=ROOT
        )
        stop_reason = ""
        stop_at = 0.0
        disk_peak = temp_peak = tree_peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            tree_peak = max(tree_peak, tree_rss(proc.pid))
            if watch is not None:
                disk_peak = max(disk_peak, dir_bytes(watch))
                temp_peak = max(temp_peak, temp_bytes(watch))
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
            time.sleep(0.25)
        code = os.waitstatus_to_exitcode(status)
        step.wall_s = time.perf_counter() - t0
        step.peak_rss_bytes = usage.ru_maxrss * 1024
        step.outcome = stop_reason or ("ok" if code == 0 else f"exit {code}")
        step.figures["tree_rss_peak_bytes"] = max(tree_peak, step.peak_rss_bytes)
        if watch is not None:
            step.figures["disk_peak_bytes"] = disk_peak
            step.figures["spool_peak_bytes"] = temp_peak
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
LOAD_KEYS = {"requests": ("requests",), "unique_blocks": ("unique_blocks",)}


def same_files(corpus: Path, back: Path) -> str:
    """How many exported Weka files are JSON-equal to their source (one file in memory at a
    time)."""
    files = sorted(corpus.glob("*.json"))
    same = 0
    for f in files:
        other = back / f.name
        if other.is_file() and orjson.loads(other.read_bytes()) == orjson.loads(f.read_bytes()):
            same += 1
    return f"{same}/{len(files)}"


def print_table(
    rows: list[Step], args: argparse.Namespace, json_bytes: int, measured: dict[str, Step]
) -> None:
    """The Markdown table; with before figures (run side by side, else ``--before``), their
    wall time and RSS and the after/before ratios."""
    before: dict[str, dict[str, Any]] = {}
    if args.before is not None:
        before = {r["name"]: r for r in orjson.loads(args.before.read_bytes())}
    before.update({name: asdict(step) for name, step in measured.items()})
    head = f"| step ({args.traces} traces, {json_bytes / 1e6:.0f} MB JSON) | outcome | wall s "
    head += "| peak RSS MiB | figures |"
    if before:
        head += " before: wall s, RSS MiB | after/before: wall, RSS |"
    print("\n" + head + "\n|---|---|---:|---:|---|" + ("---|---|" if before else ""))
    for s in rows:
        line = (
            f"| {s.name} | {s.outcome} | {s.wall_s:.1f} | {s.peak_rss_bytes / 2**20:,.0f} "
            f"| {fmt_figures(s.figures)} |"
        )
        b = before.get(s.name)
        if b is not None and b.get("wall_s"):
            ok = b.get("outcome") == "ok"
            line += f" {b['wall_s']:.1f}, {b['peak_rss_bytes'] / 2**20:,.0f} ({b['outcome']}) |"
            wall, rss = s.wall_s / b["wall_s"], s.peak_rss_bytes / max(b["peak_rss_bytes"], 1)
            line += f" {wall:.2f}x, {rss:.2f}x |" if ok else " (before did not finish) |"
        elif before:
            line += " - | - |"
        print(line)


class SimServer:
    """``agentx serve-sim --fast --profile agentx`` (sized for agent corpora: 1M-token context,
    8M-token KV cache) on a free port, for the replay step."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [*AGENTX, "serve-sim", "--port", "0", "--fast", "--profile", "agentx"],
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
        if args.replay_scenario:
            # the scenario's window and caps, but the requests bounded as the plain replay's
            cmd += ["--scenario", args.replay_scenario, "--duration", "600"]
        else:
            cmd += ["--time-scale", "0"]
        step = Step("replay", [*cmd, "--json"])
        launched_ns = time.time_ns()
        data = run(step, **caps)
    finally:
        server.close()
    step.figures.update(
        json_figures(
            data,
            {
                "requests_ok": ("requests", "ok"),
                "errors": ("requests", "errors"),
                "requests_per_s": ("throughput", "requests_per_s"),
                "reported_hit_rate": ("cache", "reported_hit_rate"),
                "bottleneck": ("bottleneck", "bottleneck"),
                "sessions_read": ("config", "trace_sessions_indexed"),
            },
        )
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
            parts.append(f"{k[:-6]} {v / 1e6:,.1f} MB")
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
    ap.add_argument(
        "--replay-scenario", choices=("agentx", "agentx-mvp"), help="replay with this --scenario"
    )
    ap.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    ap.add_argument("--jobs", type=int, default=1, help="convert --jobs N [1]")
    ap.add_argument("--before", type=Path, help="rows of an earlier run: add after/before ratios")
    ap.add_argument(
        "--before-python",
        type=Path,
        help="a python whose agentx is the code before a change: also run --before-steps with it, "
        "each right before the same step, for ratios side by side in one run",
    )
    ap.add_argument("--before-steps", default="stats,simulate", help="[stats,simulate]")
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
    jobs = ["--jobs", str(args.jobs)] if args.jobs > 1 else []
    rows: list[Step] = []
    before_rows: dict[str, Step] = {}
    before_steps = set(args.before_steps.split(",")) if args.before_python else set()
    try:
        for name in steps:
            if name in before_steps and "-" not in name:  # the same command, the old code
                old = Step(
                    name, [str(args.before_python), "-m", "agentx", name, str(corpus), "--json"]
                )
                old.figures.update(
                    json_figures(run(old, **caps), STATS_KEYS if name == "stats" else SIMULATE_KEYS)
                )
                before_rows[name] = old
                print(
                    f"{name} (before): {old.outcome}, {old.wall_s:.1f} s, peak RSS "
                    f"{old.peak_rss_bytes / 2**20:,.0f} MiB",
                    flush=True,
                )
            if name == "replay":
                step = replay_step(corpus, work, args, caps)
            elif name.endswith("-parquet") and not trace.is_file():
                step = Step(name, [], outcome="skipped: no converted trace")
            elif name in ("convert", "convert-dataset"):
                target = trace if name == "convert" else work / "dataset"
                for stale in work.glob(f"{target.name}*"):
                    shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
                out = str(target) + ("/" if name == "convert-dataset" else "")
                step = Step(name, [*AGENTX, "convert", str(corpus), "-o", out, *jobs, "--json"])
                run(step, watch=work, disk_cap=int(args.disk_cap_gb * 1e9), **caps)
                if target.exists():
                    size = dir_bytes(target) if target.is_dir() else target.stat().st_size
                    step.figures["output_bytes"] = size
                    step.figures["output_over_json"] = size / json_bytes
                    step.figures["spool_over_output"] = step.figures["spool_peak_bytes"] / size
            elif name == "simulate-load-parquet":
                step = Step(name, [sys.executable, "-c", LOAD_WORKLOAD, str(trace)])
                step.figures.update(json_figures(run(step, **caps), LOAD_KEYS))
            elif name == "export-weka":
                back = work / "weka-back"
                shutil.rmtree(back, ignore_errors=True)
                cmd = [*AGENTX, "convert", str(trace), "-o", str(back), "--to", "weka", "--json"]
                step = Step(name, cmd)
                run(step, watch=work, disk_cap=int(args.disk_cap_gb * 1e9), **caps)
                step.figures["same_files"] = same_files(corpus, back)
            else:
                source = trace if name.endswith("-parquet") else corpus
                command = name.removesuffix("-parquet").removesuffix("-replay")
                timeline = "replay" if "-replay" in name else "recorded"
                how = ["--timeline", timeline] if command == "simulate" else []
                step = Step(name, [*AGENTX, command, str(source), *how, "--json"])
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
    print_table(rows, args, json_bytes, before_rows)
    if args.json:
        args.json.write_bytes(orjson.dumps([asdict(s) for s in rows], option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
