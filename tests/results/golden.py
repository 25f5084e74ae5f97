"""The golden files of ``tests/results/golden/``: what every command that writes JSON writes for
fixed inputs, as bytes, produced through the command line only (so the files do not depend on
how agentx holds the values inside, and any agentx can be checked against them).

Inputs: the bundled traces, and ``data/``, results directories of a seeded replay of the example
trace against serve-sim (runs ``a`` and ``b``, an open-loop run, the two shards of a ``--shard
I/2`` split, a two-level sweep), and the same runs as the first agentx release wrote them
(:func:`older`: without the keys added since). A case is a function of a scratch copy of
``data/`` (the working directory while it runs); machine paths are replaced with stable names.
``live`` replays the example against an in-process serve-sim and masks the figures that depend
on timing (:data:`TIMING`). ``python tests/results/golden.py [NAME...]`` rewrites the files.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.examples import example_path

HERE = Path(__file__).parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"
COST = ["--gpu-hour-cost", "3", "--price", "input=1,cached=0.1,output=2"]


def _agentx(*args: str) -> str:
    """The command's stdout; it must succeed (exit 0) or fail its SLO (exit 3)."""
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "120"})
    assert r.exit_code in (0, 3), f"agentx {' '.join(args)}: {r.exit_code}\n{r.output}"
    return r.stdout


def _stable(text: str, work: Path) -> bytes:
    """Machine paths replaced: the bundled traces by their names, the scratch directory by ``.``."""
    for name in ("example", "weka"):
        text = text.replace(str(example_path(name)), name)
    return text.replace(str(work), ".").encode()


def _json(text: str, work: Path) -> bytes:
    """A command's JSON, kept compact (its key order and numbers are the file's; the golden
    files stay small)."""
    return _stable(orjson.dumps(orjson.loads(text)).decode(), work) + b"\n"


def _file(path: Path, work: Path) -> bytes:
    return _json(path.read_text(), work)


# -- the live replay: figures that depend on timing ---------------------------------------------

# fnmatch patterns over a value's path (``.`` between keys, ``[]`` for a list's items): the
# figures a second run of the same seeded replay measures differently. A list matched as a
# whole (one row per second, the CDF curves, the scrapes) is masked as a whole.
TIMING = (
    "started_at",
    "duration_s",
    "throughput.*",
    "latency_ms.*",
    "per_user_output_tokens_per_s.*",
    "schedule.dispatch_lag_ms.*",
    "schedule.warmup_s",
    "client.*",
    "slo.checks[].value",
    "slo.goodput.requests_per_s",
    "windows.*.span_s",
    "windows.*.requests_per_s",
    "windows.*.output_tokens_per_s",
    "windows.*.latency_ms.*",
    "rollups.per_session[].duration_s",
    "rollups.per_session[].ttft_ms_*",
    "rollups.per_turn_depth[].ttft_ms.*",
    "rollups.time_series",
    "rollups.latency_quantiles_ms.ttft",
    "rollups.latency_quantiles_ms.itl",
    "rollups.latency_quantiles_ms.e2e",
    "cache.kv_cache_usage_perc.*",
    "server.scrapes",
    "server.kv_cache_usage_samples",
    "server.window_t_ns",
    "cost.usd_per_million_*",
    "cost.token_mix.*_tokens_per_s",
    "cost.revenue_*",
    "cost.license_usd_per_hour",
    "cost.gross_*",
    "cost.breakeven_utilization",
    "clock.*",
    "bottleneck.*",
    "client_host.*",  # the machine that ran the test
    "server_identity.server_header",  # serve-sim's Python and aiohttp
)
MASK = "~"


def mask(v: Any, path: str = "") -> Any:
    """``v`` with the values at :data:`TIMING` paths replaced by ``"~"`` (an object's keys are
    kept: only its values are masked)."""
    here = path.lstrip(".")
    if here and not isinstance(v, dict) and any(fnmatch.fnmatchcase(here, p) for p in TIMING):
        return MASK
    if isinstance(v, dict):
        return {k: mask(x, f"{path}.{k}") for k, x in v.items()}
    if isinstance(v, list):
        return [mask(x, f"{path}[]") for x in v]
    return v


# the replay engine's line naming a bottleneck: whether it has one depends on the machine's load
BOTTLENECK_LINES = ("the client delayed its own requests", "the server is the bottleneck")


def live(work: Path) -> bytes:
    """A seeded replay of the example trace against serve-sim, one lane, no salt (so every
    prompt and cache hit is the same run after run): ``summary.json`` with its timing masked."""
    from agentx.serve_sim import SimConfig, SimServer

    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        stdout = _agentx(
            "replay",
            "example",
            "--endpoint",
            sim.url,
            "--concurrency",
            "1",
            "--no-salt",
            "--time-scale",
            "0",
            "--warmup",
            "1",
            "--seed",
            "7",
            "--slo",
            "ttft_p99<=60s,itl_p50<=10s,goodput>=0.5,error_rate<=1%",
            "--percentiles",
            "95",
            "--capex-per-hour",
            "1.5",
            "--power-kw",
            "1",
            "--usd-per-kwh",
            "0.1",
            "--gpus",
            "2",
            "--price-preset",
            "deepseek-v3.2",
            "-o",
            "live",
            "--json",
        )
        url = sim.url
    written = orjson.loads((work / "live" / "summary.json").read_bytes())
    assert orjson.loads(stdout) == written  # --json prints summary.json
    summary = mask(written)
    warnings = [w for w in summary.pop("warnings", []) if not w.startswith(BOTTLENECK_LINES)]
    if warnings:
        summary["warnings"] = warnings
    return _json(orjson.dumps(summary).decode().replace(url, "SIM"), work)


# -- results directories written by an earlier agentx ------------------------------------------

# the keys agentx added to summary.json after its first release, by the path of their object
ADDED_SINCE = {
    (): ("cost", "clock", "agentx_version", "gates", "tokenizer", "bottleneck"),
    ("requests",): ("bad_usage",),
    ("rollups",): ("latency_quantiles_ms",),
    ("schedule",): ("lanes", "warmup_s", "idle_caps"),
    ("server",): ("url", "counters", "kv_cache_usage_samples", "window_t_ns"),
}


def older(src: Path, dst: Path) -> Path:
    """``src`` as an agentx of the first release wrote it: no key added since, no theory.parquet."""
    dst.mkdir()
    summary = orjson.loads((src / "summary.json").read_bytes())
    for where, keys in ADDED_SINCE.items():
        block = summary
        for k in where:
            block = block[k]
        for k in keys:
            block.pop(k, None)
    (dst / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    shutil.copy(src / "requests.parquet", dst / "requests.parquet")
    return dst


def _scrub_report(work: Path) -> bytes:
    _agentx("scrub", "example", "-o", "clean.parquet", "--report", "scrub.json")
    return _file(work / "scrub.json", work)


# -- the cases --------------------------------------------------------------------------------

CASES: dict[str, Callable[[Path], bytes]] = {
    "stats_example.json": lambda w: _json(_agentx("stats", "example", "--json"), w),
    "stats_weka.json": lambda w: _json(_agentx("stats", "weka", "--json"), w),
    "simulate_recorded.json": lambda w: _json(
        _agentx(
            "simulate", "example", "--timeline", "recorded", "--offload-tokens", "20000", "--json"
        ),
        w,
    ),
    "simulate_replay.json": lambda w: _json(
        _agentx(
            "simulate",
            "example",
            "--kv-blocks",
            "64,96",
            "--block-size",
            "64",
            "--offload-tokens",
            "4096",
            "--concurrency",
            "2",
            "--json",
        ),
        w,
    ),
    "simulate_from_results.json": lambda w: _json(
        _agentx("simulate", "example", "--from-results", "a", "--json"), w
    ),
    "scrub_example.json": _scrub_report,
    "report_a.txt": lambda w: _stable(_agentx("report", "a"), w),
    "report_a_recomputed.json": lambda w: _json(
        _agentx("report", "a", "--percentiles", "75,99.5", *COST, "--json"), w
    ),
    "compare_a_b.json": lambda w: _json(_agentx("report", "a", "--compare", "b", "--json"), w),
    "merge.json": lambda w: _json(_agentx("merge", "shard0", "shard1", "--json"), w),
    "merge_slo_cost.json": lambda w: _json(
        _agentx("report", "shard0", "shard1", "--slo", "ttft_p99<=1s", *COST, "--json"), w
    ),
    "report_old.txt": lambda w: _stable(_agentx("report", "old_a"), w),
    "compare_old_b.json": lambda w: _json(
        _agentx("report", "old_a", "--compare", "b", "--json"), w
    ),
    "merge_old.json": lambda w: _json(_agentx("merge", "old_shard0", "old_shard1", "--json"), w),
    "sweep.json": lambda w: _json(_agentx("report", "sweep", "--json"), w),
    "sweep_recomputed.json": lambda w: _json(
        _agentx("report", "sweep", "--percentiles", "95", *COST, "--json"), w
    ),
    "live_summary.json": live,
}


@contextmanager
def workdir(tmp: Path) -> Iterator[Path]:
    """A scratch copy of ``data/`` as the working directory."""
    work = tmp / "work"
    shutil.copytree(DATA, work)
    for name in ("a", "shard0", "shard1"):
        older(work / name, work / f"old_{name}")
    before = Path.cwd()
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(before)


def produce(name: str, tmp: Path) -> bytes:
    with workdir(tmp) as work:
        return CASES[name](work)


if __name__ == "__main__":
    import tempfile

    GOLDEN.mkdir(exist_ok=True)
    for name in sys.argv[1:] or CASES:
        with tempfile.TemporaryDirectory() as d:
            (GOLDEN / name).write_bytes(produce(name, Path(d)))
        print("wrote", GOLDEN / name)
