"""`make bench BENCH=harness`: agentx replay and SemiAnalysis's agentx-harness, side by side.

Both tools replay the same Weka traces against the same `agentx serve-sim` (a fresh server for
each run, `--fast --max-model-len 400000`) with the same seed, scenario (`agentx`) and
concurrency, and this script compares what they sent and what it cost them:

- the split of flat parallel agents: the harness's own reading of every trace it loads
  (scripts/harness_reading.py, in its venv) against agentx's threads, and the counts its log
  line gives against `agentx stats`' `flat_chains`;
- requests and (trace, chain, turn) sets per phase, agentx with its default spawn/join rule and
  with `--spawn-join harness`: warm-up (primers at t* and the accelerated requests) and measured
  (a duration window); a chain is `main`, a subagent's `agent_id`, or a
  flat chain's name (`fa:000`, `aux:001`, `wg:000_001`), the suffix of the harness's
  conversation id;
- input/output tokens: the recorded `in`/`out` of the requests sent (equal sets -> equal
  totals) and the server-counted usage (differs by how each tool lays out the text);
- the cache hit rate the server reported in the usage blocks (cached / prompt tokens);
- client CPU seconds and peak RSS of the whole process tree, seconds from launch to the first
  request;
- spawn/join: one lane on the trace with subagents from its start, the order in which main and
  subagent requests went out (agentx with its default rule and with `--spawn-join harness`);
- the same traces packed (`agentx dataset pack`): the harness replays the packed `traces.jsonl`
  (its `weka` config, `--hf-weka-dataset DIR --hf-subset weka`), agentx the packed directory.

Settings (environment): AGENTX_HARNESS_VENV (default .venv-harness, created by
scripts/harness_venv.sh when missing), BENCH_TRACE (a directory of Weka traces; default the
bundled samples), BENCH_CORPUS (N: generate N traces of the real corpus's shape, flat agents
included, with scripts/weka_corpus into BENCH_OUT/corpus-N and replay them instead),
BENCH_CONCURRENCY (default: one lane per trace, at most 16), BENCH_DURATION (s, default 60),
BENCH_SPAWN_TRACE (a Weka file with subagents; default the bundled trace_0010_head),
BENCH_SPAWN_DURATION (s, default 90; 0 skips it), BENCH_PACKED (0 skips the packed dataset's
runs), BENCH_OUT (default /tmp/agentx-bench-harness).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENTX = Path(sys.executable).parent / "agentx"
SEED = 42
MAX_ENTRIES = 393  # the harness's agentx scenario loads the first 393 traces (agentx's too)
Key = tuple[str, str, int]  # (trace, chain, turn)


# -- processes, measured -----------------------------------------------------------------------


@dataclass
class Measured:
    launch_ns: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rc: int


def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p))
    out, i = [root], 0
    while i < len(out):
        out += kids.get(out[i], [])
        i += 1
    return out


def run_measured(cmd: list[str], env: dict[str, str], log: Path) -> Measured:
    """Run ``cmd``; sample its process tree's summed RSS and CPU ticks every 0.2 s."""
    hz = os.sysconf("SC_CLK_TCK")
    launch = time.time_ns()
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    ticks: dict[int, int] = {}
    peak = 0

    def sample() -> None:
        nonlocal peak
        while proc.poll() is None:
            rss = 0
            for pid in _tree(proc.pid):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    ticks[pid] = max(ticks.get(pid, 0), int(stat[11]) + int(stat[12]))
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS"):
                            rss += int(line.split()[1])
                except (OSError, IndexError, ValueError):
                    pass
            peak = max(peak, rss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rc = proc.wait()
    sampler.join()
    return Measured(launch, time.perf_counter() - t0, sum(ticks.values()) / hz, peak / 1024, rc)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sim:
    """A fresh serve-sim for one run."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "wb")  # noqa: SIM115 (closed in __exit__)
        cmd = [str(AGENTX), "serve-sim", "--port", str(self.port), "--fast"]
        cmd += ["--max-model-len", "400000", "--model", "agentx-sim"]
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)

    def __enter__(self) -> Sim:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/v1/models", timeout=1).read()
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("serve-sim did not start")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self._log.close()


# -- what each tool sent ------------------------------------------------------------------------


@dataclass
class Row:
    key: Key
    warmup: bool
    start_ns: int
    prompt: int | None
    cached: int | None
    completion: int | None


@dataclass
class Run:
    tool: str
    measured: Measured
    rows: list[Row] = field(default_factory=list)


def harness_key(conversation_id: str) -> tuple[str, str]:
    """(trace, chain) of a harness conversation: ``T`` (main), ``T::sa:AGENT`` (a subagent),
    ``T::fa:000``, ``T::aux:001``, ``T::wg:000_001`` (flat chains)."""
    trace, _, rest = conversation_id.partition("::")
    if not rest:
        return trace, "main"
    return trace, rest[3:] if rest.startswith("sa:") else rest


def harness_rows(artifacts: Path) -> list[Row]:
    rows = []
    for line in (artifacts / "profile_export.jsonl").read_text().splitlines():
        rec = json.loads(line)
        meta, metrics = rec["metadata"], rec.get("metrics", {})
        trace, agent = harness_key(meta["conversation_id"])

        def value(name: str, metrics: dict[str, Any] = metrics) -> int | None:
            got = metrics.get(name)
            return int(got["value"]) if got else None

        rows.append(
            Row(
                (trace, agent, int(meta["turn_index"])),
                meta["benchmark_phase"] == "warmup",
                int(meta["request_start_ns"]),
                value("usage_prompt_tokens"),
                value("usage_prompt_cache_read_tokens"),
                value("usage_completion_tokens"),
            )
        )
    return rows


def agentx_rows(results: Path) -> list[Row]:
    from agentx.store.results import read_requests

    rows = []
    for r in read_requests(results / "requests.parquet"):
        trace = r.session_id.split("#")[0]
        agent = r.thread_id.rsplit("/", 1)[-1]
        rows.append(
            Row(
                (trace, agent, r.turn),
                r.warmup,
                r.start_wall_ns,
                r.prompt_tokens,
                r.cached_tokens,
                r.completion_tokens,
            )
        )
    return rows


def recorded_tokens(trace_dir: Path) -> dict[Key, tuple[int, int]]:
    """(trace, chain, turn) -> recorded (in, out) of the Weka files, as agentx splits them."""
    from agentx.formats import load_exchanges

    out: dict[Key, tuple[int, int]] = {}
    for ex in load_exchanges(trace_dir):
        thread, _, n = ex.request_id.rpartition("/")
        key = (ex.session_id, thread.rsplit("/", 1)[-1], int(n))
        out[key] = (ex.usage.prompt_tokens or 0, ex.usage.completion_tokens or 0)
    return out


# -- the split of flat agents ---------------------------------------------------------------


def loaded(traces: Path) -> list[Path]:
    """The files both tools load: the first 393 by name."""
    return sorted(traces.glob("*.json"))[:MAX_ENTRIES]


def compare_reading(venv: Path, traces: Path, base: Path) -> dict[str, Any]:
    """The harness's own split of the loaded traces against agentx's threads: per trace, each
    chain's (t, in) in turn order."""
    from agentx.core.flags import FLAG_SUBAGENT
    from agentx.formats.weka import read_weka_file

    files = loaded(traces)
    out = base / "HARNESS_READING"
    with open(out, "wb") as fh:
        cmd = [str(venv / "bin" / "python"), str(ROOT / "scripts" / "harness_reading.py")]
        subprocess.run([*cmd, *map(str, files)], check=True, stdout=fh)
    reading = json.loads(out.read_text())
    same, differ = 0, []
    counts: Counter[str] = Counter()
    for f in files:
        mine: dict[str, dict[int, tuple[int, int | None]]] = {}
        for ex in read_weka_file(f).exchanges:
            if FLAG_SUBAGENT in ex.flags:
                continue
            thread, _, n = ex.request_id.rpartition("/")
            key = (ex.timing.start_wall_ns, ex.usage.prompt_tokens)
            mine.setdefault(thread.rsplit("/", 1)[-1], {})[int(n)] = key
        theirs: dict[str, dict[int, tuple[int, int | None]]] = {}
        top = [r for r in json.loads(f.read_bytes())["requests"] if r.get("type") != "subagent"]
        for (name, turn), r in zip(reading[f.name]["chains"], top, strict=True):
            theirs.setdefault(name, {})[turn] = (round(r["t"] * 1e9), r["in"])
        if mine == theirs:
            same += 1
        else:
            differ.append(f.name)
        counts.update(reading[f.name]["counts"])
    return {"traces": len(files), "same_split": same, "differ": differ[:20], "counts": counts}


# -- the runs -------------------------------------------------------------------------------------


def dataset_args(traces: Path) -> list[str]:
    """How agentx-harness is told where the traces are: a directory of Weka files, or an
    `agentx dataset pack` directory, whose `weka` config holds traces.jsonl's rows (loaded with
    `datasets.load_dataset(DIR, "weka")`, as the harness loads a hub dataset)."""
    if (traces / "manifest.json").is_file():
        return ["--hf-weka-dataset", str(traces), "--hf-subset", "weka"]
    return ["--custom-dataset-type", "weka_trace", "--input-file", str(traces)]


def harness_cmd(
    venv: Path, url: str, traces: Path, lanes: int, duration: float, art: Path, extra: list[str]
) -> list[str]:
    return [
        str(venv / "bin" / "agentx"),
        "profile",
        "--scenario",
        "agentx",
        "--unsafe-override",
        "-m",
        "agentx-sim",
        "--url",
        url,
        "--endpoint-type",
        "chat",
        *dataset_args(traces),
        "--tokenizer",
        "cl100k_base",
        "--concurrency",
        str(lanes),
        "--benchmark-duration",
        str(duration),
        "--random-seed",
        str(SEED),
        "--export-level",
        "records",
        "--ui",
        "none",
        "--artifact-dir",
        str(art),
        *extra,
    ]


def agentx_cmd(
    url: str, traces: Path, lanes: int, duration: float, out: Path, extra: list[str]
) -> list[str]:
    return [
        str(AGENTX),
        "replay",
        str(traces),
        "--endpoint",
        url,
        "--scenario",
        "agentx",
        "--concurrency",
        str(lanes),
        "--duration",
        str(duration),
        "--seed",
        str(SEED),
        "-o",
        str(out),
        "--json",
        *extra,
    ]


def run_both(
    name: str,
    venv: Path,
    traces: Path,
    lanes: int,
    duration: float,
    base: Path,
    harness_extra: list[str],
    agentx_variants: dict[str, list[str]],
) -> list[Run]:
    runs = []
    hdir = base / f"{name}-harness"
    shutil.rmtree(hdir, ignore_errors=True)
    hdir.mkdir(parents=True)
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(venv / "tiktoken-cache")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")  # a packed directory is local
    # the harness keeps each corpus it loaded as memory-mapped files (~/.cache/aiperf; 11 GB for
    # 393 generated traces) and a rerun skips its loader: an empty cache of the run's own, so
    # every run is measured as a first one, and its split is logged
    cache = hdir / "dataset-mmap"
    env["AIPERF_DATASET_MMAP_CACHE_DIR"] = str(cache)
    with Sim(hdir / "sim.log") as sim:
        cmd = harness_cmd(venv, sim.url, traces, lanes, duration, hdir / "artifacts", harness_extra)
        m = run_measured(cmd, env, hdir / "stdout.txt")
    shutil.rmtree(cache, ignore_errors=True)
    print(f"{name}: agentx-harness rc={m.rc} wall={m.wall_s:.1f}s", flush=True)
    runs.append(Run("agentx-harness", m, harness_rows(hdir / "artifacts")))
    for variant, extra in agentx_variants.items():
        adir = base / f"{name}-{variant}"
        shutil.rmtree(adir, ignore_errors=True)
        adir.mkdir(parents=True)
        with Sim(adir / "sim.log") as sim:
            cmd = agentx_cmd(sim.url, traces, lanes, duration, adir / "results", extra)
            m = run_measured(cmd, dict(os.environ), adir / "stdout.txt")
        print(f"{name}: {variant} rc={m.rc} wall={m.wall_s:.1f}s", flush=True)
        runs.append(Run(variant, m, agentx_rows(adir / "results")))
    return runs


# -- the comparison -------------------------------------------------------------------------------


def phase_figures(rows: list[Row], recorded: dict[Key, tuple[int, int]]) -> dict[str, Any]:
    prompt = sum(r.prompt or 0 for r in rows)
    cached = sum(r.cached or 0 for r in rows if r.cached is not None)
    known = sum(r.prompt or 0 for r in rows if r.cached is not None)
    return {
        "requests": len(rows),
        "recorded_in": sum(recorded[r.key][0] for r in rows if r.key in recorded),
        "recorded_out": sum(recorded[r.key][1] for r in rows if r.key in recorded),
        "server_prompt_tokens": prompt,
        "server_completion_tokens": sum(r.completion or 0 for r in rows),
        "usage_hit_rate": round(100 * cached / known, 2) if known else None,
    }


def compare(runs: list[Run], recorded: dict[Key, tuple[int, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    base = runs[0]
    for run in runs:
        warm = [r for r in run.rows if r.warmup]
        meas = [r for r in run.rows if not r.warmup]
        first = min((r.start_ns for r in run.rows), default=run.measured.launch_ns)
        out[run.tool] = {
            "warmup": phase_figures(warm, recorded),
            "measured": phase_figures(meas, recorded),
            "warmup_set_equals_harness": Counter(r.key for r in warm)
            == Counter(r.key for r in base.rows if r.warmup),
            "measured_set_equals_harness": Counter(r.key for r in meas)
            == Counter(r.key for r in base.rows if not r.warmup),
            "warmup_keys_in_common": len(
                set(r.key for r in warm) & {r.key for r in base.rows if r.warmup}
            ),
            "measured_keys_in_common": len(
                set(r.key for r in meas) & {r.key for r in base.rows if not r.warmup}
            ),
            "first_measured_keys": [
                list(r.key) for r in sorted(meas, key=lambda r: r.start_ns)[:8]
            ],
            "client_cpu_s": round(run.measured.cpu_s, 2),
            "peak_rss_mb": round(run.measured.peak_rss_mb),
            "wall_s": round(run.measured.wall_s, 1),
            "s_to_first_request": round((first - run.measured.launch_ns) / 1e9, 2),
            "rc": run.measured.rc,
        }
    return out


def order(run: Run) -> list[tuple[str, int, float]]:
    rows = sorted(run.rows, key=lambda r: r.start_ns)
    t0 = rows[0].start_ns if rows else 0
    return [(r.key[1], r.key[2], round((r.start_ns - t0) / 1e9, 2)) for r in rows]


def table(figures: dict[str, Any]) -> str:
    tools = list(figures)
    lines = ["| | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]

    def row(label: str, get: Any) -> None:
        lines.append(f"| {label} | " + " | ".join(str(get(figures[t])) for t in tools) + " |")

    for phase in ("warmup", "measured"):
        row(f"{phase}: requests", lambda f, p=phase: f[p]["requests"])
        row(
            f"{phase}: recorded in / out tokens",
            lambda f, p=phase: f"{f[p]['recorded_in']:,} / {f[p]['recorded_out']:,}",
        )
        row(
            f"{phase}: server prompt / completion tokens",
            lambda f, p=phase: (
                f"{f[p]['server_prompt_tokens']:,} / {f[p]['server_completion_tokens']:,}"
            ),
        )
        row(f"{phase}: hit rate (usage)", lambda f, p=phase: f"{f[p]['usage_hit_rate']} %")
    row("warm-up (trace, chain, turn) set = harness's", lambda f: f["warmup_set_equals_harness"])
    row("measured (trace, chain, turn) set = harness's", lambda f: f["measured_set_equals_harness"])
    row(
        "keys in common with the harness (warm-up / measured)",
        lambda f: f"{f['warmup_keys_in_common']} / {f['measured_keys_in_common']}",
    )
    row("client CPU s (process tree)", lambda f: f["client_cpu_s"])
    row("peak RSS, MB (process tree)", lambda f: f["peak_rss_mb"])
    row("launch -> first request, s", lambda f: f["s_to_first_request"])
    row("wall, s", lambda f: f["wall_s"])
    return "\n".join(lines)


def corpus(n: int, base: Path) -> Path:
    """A generated corpus of ``n`` traces of the real corpus's shape (flat agents included)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from weka_corpus import DEFAULT_SEED, ensure_corpus

    out = base / f"corpus-{n}"
    ensure_corpus(out, n, DEFAULT_SEED)
    return out


def harness_split_line(log: Path) -> str | None:
    """The harness's log line with its split counts ("flattened-agent detection split ...")."""
    for line in log.read_text(errors="replace").splitlines():
        if "flattened-agent detection split" in line:
            return line[line.index("flattened-agent") :].strip()
    return None


def main() -> int:
    venv = Path(os.environ.get("AGENTX_HARNESS_VENV", ROOT / ".venv-harness"))
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "harness_venv.sh"), str(venv)],
        check=True,
        env={**os.environ, "AGENTX_VENV_PY": sys.executable},
    )
    from agentx.core.examples import example_path
    from agentx.workload.stats import compute_stats

    base = Path(os.environ.get("BENCH_OUT", "/tmp/agentx-bench-harness"))
    base.mkdir(parents=True, exist_ok=True)
    generated = os.environ.get("BENCH_CORPUS")
    if generated:
        traces = corpus(int(generated), base)
    else:
        traces = Path(os.environ.get("BENCH_TRACE", example_path("weka")))
    files = loaded(traces)
    lanes = int(os.environ.get("BENCH_CONCURRENCY", min(16, len(files))))
    duration = float(os.environ.get("BENCH_DURATION", "60"))
    spawn_file = Path(
        os.environ.get("BENCH_SPAWN_TRACE", example_path("weka") / "trace_0010_head.json")
    )
    spawn_duration = float(os.environ.get("BENCH_SPAWN_DURATION", "90"))
    print(f"uptime: {os.getloadavg()}; traces {traces}, {lanes} lanes, {duration:g} s", flush=True)

    split = compare_reading(venv, traces, base)
    print(
        f"flat split: {split['same_split']} of {split['traces']} loaded traces split as the "
        f"harness splits them; its counts: {dict(split['counts'])}",
        flush=True,
    )
    variants = {"agentx": [], "agentx --spawn-join harness": ["--spawn-join", "harness"]}
    runs = run_both("scenario", venv, traces, lanes, duration, base, [], variants)
    recorded = recorded_tokens(traces)
    figures = compare(runs, recorded)
    capped = base / "loaded"
    shutil.rmtree(capped, ignore_errors=True)
    capped.mkdir()
    for f in files:
        (capped / f.name).symlink_to(f.resolve())
    stats = compute_stats(capped).flat_chains
    line = harness_split_line(base / "scenario-harness" / "stdout.txt")
    print(f"harness: {line}\nagentx stats: {stats}", flush=True)
    print("\n" + table(figures) + "\n", flush=True)
    results: dict[str, Any] = {
        "scenario": figures,
        "split": split,
        "harness_split_line": line,
        "agentx_flat_chains": None if stats is None else stats.to_json(),
        "load": os.getloadavg(),
    }
    if os.environ.get("BENCH_PACKED", "1") != "0":
        # the same traces packed as a dataset: the harness replays its traces.jsonl (the weka
        # config), agentx the directory (its default config)
        packed = base / "packed"
        pack = [str(AGENTX), "dataset", "pack", str(traces), "-o", str(packed), "--force"]
        subprocess.run([*pack, "--no-plots"], check=True, stdout=subprocess.DEVNULL)
        packed_runs = run_both("packed", venv, packed, lanes, duration, base, [], {"agentx": []})
        packed_figures = compare(packed_runs, recorded)
        print("packed dataset (harness: its weka config; agentx: the directory)")
        print("\n" + table(packed_figures) + "\n", flush=True)
        runs += packed_runs
        results["packed"] = packed_figures
    spawn_runs: list[Run] = []
    if spawn_duration > 0:
        spawn_dir = base / "spawn-trace"
        shutil.rmtree(spawn_dir, ignore_errors=True)
        spawn_dir.mkdir(parents=True)
        shutil.copy(spawn_file, spawn_dir / spawn_file.name)
        ratio = [
            "--trajectory-start-min-ratio",
            "0",
            "--trajectory-start-max-ratio",
            "0.001",
            "--warmup-requests-per-lane",
            "1",
        ]
        mine = ["--start-ratio", "0:0.001", "--warmup", "1"]
        spawn_runs = run_both(
            "spawn",
            venv,
            spawn_dir,
            1,
            spawn_duration,
            base,
            ratio,
            {"agentx": mine, "agentx --spawn-join harness": [*mine, "--spawn-join", "harness"]},
        )
        orders = {run.tool: order(run) for run in spawn_runs}
        for tool, seq in orders.items():
            print(f"\n{tool}: (agent, turn, s after the first request)")
            print(", ".join(f"{a}/{k}@{t}" for a, k, t in seq[:40]))
        results["spawn_order"] = orders
    (base / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print(f"\nresults in {base}/results.json")
    return 0 if all(r.measured.rc == 0 for r in runs + spawn_runs) else 1


if __name__ == "__main__":
    sys.exit(main())
