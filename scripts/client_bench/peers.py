"""Whole tools as child processes: `vllm bench serve`, AIPerf, agentx-harness, `agentx replay`.

Each tool spends seconds starting (imports, tokenizer, prompts, worker processes), so its CPU
per unit of work is measured *differentially*: one run of ``n`` requests and one of ``k x n``;
the extra CPU of the second run (its whole process tree, pinned to core 0) is what the extra
``(k - 1) x n`` requests cost. The wall rate is the one the tool reports for the larger run.

Every process a tool starts is counted: this process is a child subreaper (Linux), so orphaned
descendants are re-parented here and reaped, and their CPU lands in ``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
PR_SET_CHILD_SUBREAPER = 36
VLLM_PY = Path(os.environ.get("AGENTX_VLLM_VENV", ROOT / ".venv-vllm")) / "bin" / "python"
TINY_MODEL = Path(os.environ.get("AGENTX_VLLM_MODEL_DIR", ROOT / ".cache" / "tiny-llama"))
HF_HOME = Path(os.environ.get("AGENTX_PEER_HF_HOME", ROOT / ".cache" / "hf-home"))
_VLLM_MAIN = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children() -> list[int]:
    me = os.getpid()
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                kids.append(int(entry.name))
    return kids


def _reap(keep: set[int], timeout_s: float = 60.0) -> None:
    """Wait for every child but ``keep`` (orphans a tool left behind) and reap them."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [p for p in _children() if p not in keep]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, 9)
        time.sleep(0.1)


@dataclass(frozen=True)
class Run:
    stdout: str
    cpu_s: float
    ok: bool


def run_tree(argv: list[str], env: dict[str, str], keep: set[int], cwd: Path) -> Run:
    """Run ``argv`` pinned to core 0; CPU of its whole process tree."""
    pin = ["taskset", "-c", "0"] if sys.platform.startswith("linux") else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [*pin, *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
        cwd=cwd,
    )
    _reap(keep)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        print(f"  ({argv[0]} exited {out.returncode}: {' | '.join(tail)[:300]})", file=sys.stderr)
    return Run(out.stdout + out.stderr, cpu, out.returncode == 0)


@dataclass(frozen=True)
class Load:
    """The same work for every tool: ``requests`` requests at ``concurrency``, prompts of
    ``input_len`` tokens (the tool's own tokenizer), answers of ``output_len`` tokens."""

    url: str
    concurrency: int
    input_len: int
    output_len: int


# A tool: (load, requests, workdir) -> argv, env, and a parser of (rate per s, unit) from its run.
Rate = Callable[[Run, Path], float | None]


@dataclass(frozen=True)
class Tool:
    name: str
    argv: Callable[[Load, int, Path], list[str]]
    env: dict[str, str]
    rate: Callable[[Run, Path, str], float | None]  # unit "chunks" or "requests"
    # CPU seconds per request of the tool's hot path alone, when it reports it
    inner: Callable[[Path], float | None] | None = None

    def measure(
        self, load: Load, n: int, factor: int, unit: str, per_request: int, keep: set[int]
    ) -> dict[str, float] | None:
        """Differential figures for ``n`` requests: units, wall and CPU seconds. A first run
        of ``n`` is discarded: a tool's first start on a machine compiles its bytecode and reads
        its files cold, which would weigh on the run of ``n`` alone and flatter the difference."""
        results = []
        inner = None
        for count in (n, n, factor * n):
            with tempfile.TemporaryDirectory(prefix=f"bench-{self.name}-") as tmp:
                work = Path(tmp)
                run = run_tree(self.argv(load, count, work), self.env, keep, work)
                rate = self.rate(run, work, unit) if run.ok else None
                if self.inner is not None and rate is not None:
                    inner = self.inner(work)
            if rate is None:
                return None
            results.append((rate, run.cpu_s))
        _, (_, cpu1), (rate_k, cpu_k) = results
        if cpu_k <= cpu1:
            return None
        units = float(n * per_request)
        per_unit = (cpu_k - cpu1) / ((factor - 1) * units)
        out = {"units": units, "wall_s": units / rate_k, "cpu_s": units * per_unit}
        if inner is not None:
            out["inner_cpu_s"] = n * inner
        return out


# -- vllm bench serve --------------------------------------------------------------------------


def _vllm_argv(load: Load, requests: int, work: Path) -> list[str]:
    return [
        str(VLLM_PY),
        "-c",
        _VLLM_MAIN,
        "--backend",
        "openai-chat",
        "--base-url",
        load.url,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        "bench",
        "--tokenizer",
        str(TINY_MODEL),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(load.input_len),
        "--random-output-len",
        str(load.output_len),
        "--num-prompts",
        str(requests),
        "--max-concurrency",
        str(load.concurrency),
        "--ignore-eos",
        "--disable-tqdm",
        "--seed",
        "42",
    ]


def _vllm_rate(run: Run, _work: Path, unit: str) -> float | None:
    key = "Output token throughput (tok/s):" if unit == "chunks" else "Request throughput (req/s):"
    for line in run.stdout.splitlines():
        if line.startswith(key):
            return float(line.split(":")[1])
    return None


VLLM_BENCH = Tool("vllm bench serve", _vllm_argv, {"HF_HUB_OFFLINE": "1"}, _vllm_rate)


def vllm_available() -> bool:
    return VLLM_PY.exists() and (TINY_MODEL / "tokenizer.json").exists()


# -- AIPerf and agentx-harness (its fork of AIPerf, without the agentx scenario) -----------------


def _aiperf_argv(venv: Path) -> Callable[[Load, int, Path], list[str]]:
    def argv(load: Load, requests: int, work: Path) -> list[str]:
        return [
            str(venv / "bin" / "aiperf"),
            "profile",
            "-m",
            "bench",
            "--url",
            load.url,
            "--endpoint-type",
            "chat",
            "--streaming",
            "--tokenizer",
            "agentx/tiny-llama",
            "--concurrency",
            str(load.concurrency),
            "--request-count",
            str(requests),
            "--synthetic-input-tokens-mean",
            str(load.input_len),
            "--synthetic-input-tokens-stddev",
            "0",
            "--output-tokens-mean",
            str(load.output_len),
            "--output-tokens-stddev",
            "0",
            "--extra-inputs",
            "ignore_eos:true",
            "--use-server-token-count",
            "--ui",
            "none",
            "--no-server-metrics",
            "--no-gpu-telemetry",
            "--random-seed",
            "42",
            "--artifact-dir",
            str(work / "artifacts"),
        ]

    return argv


def _aiperf_rate(_run: Run, work: Path, unit: str) -> float | None:
    path = work / "artifacts" / "profile_export_aiperf.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    key = "output_token_throughput" if unit == "chunks" else "request_throughput"
    value = (data.get(key) or {}).get("avg")
    return float(value) if value else None


def peer_venv(kind: str) -> Path | None:
    """The peer's venv (created by scripts/peer_venv.sh), or None when it cannot be made."""
    out = subprocess.run(
        ["bash", str(SCRIPTS / "peer_venv.sh"), kind], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        print(f"  ({kind}: {out.stderr.strip()[-300:]})", file=sys.stderr)
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def aiperf_tool(name: str, venv: Path) -> Tool:
    env = {"HF_HOME": str(HF_HOME), "HF_HUB_OFFLINE": "1", "AIPERF_UI_TYPE": "none"}
    return Tool(name, _aiperf_argv(venv), env, _aiperf_rate)


# -- agentx replay (the 100K-token-prompt case) --------------------------------------------------


def agentx_replay_tool(trace: Path, extra_env: dict[str, str] | None = None) -> Tool:
    agentx = ROOT / ".venv" / "bin" / "agentx"

    def argv(load: Load, requests: int, work: Path) -> list[str]:
        return [
            str(agentx),
            "replay",
            str(trace),
            "--endpoint",
            load.url,
            "--concurrency",
            str(load.concurrency),
            "--max-requests",
            str(requests),
            "--time-scale",
            "0",
            "--no-metrics",
            "-o",
            str(work / "out"),
        ]

    def rate(_run: Run, work: Path, unit: str) -> float | None:
        path = work / "out" / "summary.json"
        if not path.exists():
            return None
        s = json.loads(path.read_text())
        if unit == "requests":
            return float(s["throughput"]["requests_per_s"]) or None
        return float(s["throughput"]["output_tokens_per_s"]) or None

    def lanes_cpu(work: Path) -> float | None:
        """The lanes' own CPU per request (summary: the event loop's thread time)."""
        s = json.loads((work / "out" / "summary.json").read_text())
        total = s["requests"]["total"]
        return s["client"]["cpu_percent"] / 100 * s["duration_s"] / total if total else None

    return Tool("agentx replay", argv, dict(extra_env or {}), rate, lanes_cpu)
