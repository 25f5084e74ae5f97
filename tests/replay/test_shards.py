"""Scale-out end to end: `agentx replay --shard I/N` as N real processes against serve-sim in its
own process, started together by `--start-at`, then `agentx merge`; the merge must equal one
unsharded run of the same trace (`--time-scale 0`, `--no-salt` so prompts are byte-identical
across runs): counts and token totals exactly, percentiles from the same rows, the theoretical
hit rate over one cache, the server's /metrics counted once although every shard scraped it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentx.core.percentiles import percentiles
from agentx.metrics import latency as lat
from agentx.metrics.prometheus import parse_prometheus
from agentx.report.merge import merge_results
from agentx.serve_sim import SimConfig
from agentx.serve_sim.process import SimProcess
from agentx.store.results import read_requests

N = 3
START_LEAD_S = 6.0  # time for N interpreters to import agentx and load the trace on a busy machine


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess(SimConfig.of(port=0, fast=True)) as server:
        yield server


def replay(url: str, out: Path, *args: str) -> list[str]:
    return [
        *(sys.executable, "-m", "agentx", "replay", "example", "--endpoint", url),
        *("--time-scale", "0", "--no-salt", "--concurrency", "2", "-o", str(out), "--json"),
        # a shard that reaches the barrier late would send its test request inside the others'
        # /metrics windows: the servers' counters then hold more than the shards' rows
        "--no-preflight",
        *args,
    ]


def summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "summary.json").read_text())
    return data


@pytest.fixture(scope="module")
def runs(sim: SimProcess, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("shards")
    start_at = time.time() + START_LEAD_S
    procs = [
        subprocess.Popen(
            replay(sim.url, tmp / f"shard-{i}", "--shard", f"{i}/{N}", "--start-at", f"{start_at}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(N)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * N, errors
    shards = [tmp / f"shard-{i}" for i in range(N)]
    merged = merge_results(shards, tmp / "merged")
    # one unsharded run of the same trace, after the shards (so their /metrics windows hold
    # only their own traffic)
    single = subprocess.run(
        replay(sim.url, tmp / "single"), capture_output=True, text=True, timeout=120
    )
    assert single.returncode == 0, single.stderr
    return {
        "start_at": start_at,
        "shards": shards,
        "errors": errors,
        "merged": merged.summary.to_json(),
        "single": summary(tmp / "single"),
        "dir": tmp,
    }


def test_shards_start_together_at_the_barrier(runs: dict[str, Any]) -> None:
    """Every shard waits for the barrier and starts within a moment of it; a shard that got
    there late (a machine too loaded to load the trace within START_LEAD_S) starts at once and
    says so in its summary."""
    for d, err in zip(runs["shards"], runs["errors"], strict=True):
        s = summary(d)
        start = s["clock"]["wall_ns"] / 1e9
        assert start >= runs["start_at"]
        if "waiting" in err:
            assert start - runs["start_at"] < 2.0, err  # loose: a loaded 2-core machine
            assert not any("--start-at" in w for w in s.get("warnings", ()))
        else:
            assert "has passed: starting now" in err, err
            assert any("--start-at" in w and "started at once" in w for w in s["warnings"])


def test_counts_and_tokens_equal_one_unsharded_run(runs: dict[str, Any]) -> None:
    merged, single = runs["merged"], runs["single"]
    assert merged["requests"]["total"] == single["requests"]["total"] == 48
    assert merged["requests"]["ok"] == single["requests"]["ok"] == 48
    assert merged["tokens"]["input"] == single["tokens"]["input"]
    assert merged["tokens"]["output"] == single["tokens"]["output"]
    assert merged["sessions"] == single["sessions"] == {"started": 5, "completed": 5}
    shard_requests = [summary(d)["requests"]["total"] for d in runs["shards"]]
    assert sum(shard_requests) == 48 and all(shard_requests)
    assert [m["shard"] for m in merged["merged_from"]] == [f"{i}/{N}" for i in range(N)]


def test_percentiles_are_those_of_the_concatenated_rows(runs: dict[str, Any]) -> None:
    rows = [r for d in runs["shards"] for r in read_requests(d / "requests.parquet")]
    ok = [r for r in lat.measured(rows) if r.ok]
    latency = runs["merged"]["latency_ms"]
    for key, fn in (("ttft", lat.ttft_ms), ("e2e", lat.e2e_ms), ("tpot", lat.tpot_ms)):
        want = percentiles(lat.known(fn, ok)).to_json()
        # unknown exactly where the rows leave it unknown (TPOT of tokens that arrived at once)
        assert {k for k, v in latency[key].items() if v is None} == {
            k for k, v in want.items() if v is None
        }, key
        known = {k: v for k, v in want.items() if v is not None}
        got = {k: v for k, v in latency[key].items() if v is not None}
        assert got == pytest.approx(known, rel=1e-12), key
    assert latency["itl"] == pytest.approx(percentiles(lat.pooled_itl_ms(ok)).to_json(), rel=1e-12)
    merged_rows = read_requests(runs["dir"] / "merged" / "requests.parquet")
    assert sorted(r.request_id for r in merged_rows) == sorted(r.request_id for r in rows)


def test_theoretical_hit_rate_is_one_cache_over_all_shards(runs: dict[str, Any]) -> None:
    """The example's sessions share prompt prefixes (--no-salt keeps them): each shard's own
    cache misses what another shard already sent, so the shards' own rates combined undercount;
    the merge replays one cache and finds the unsharded run's figure (this trace's total is the
    same in any interleaving: checked over 300 random orders when this test was written)."""
    merged, single = runs["merged"], runs["single"]
    own = [read_requests(d / "requests.parquet") for d in runs["shards"]]
    hits = sum(r.theoretical_hit_tokens or 0 for rows in own for r in rows)
    prompt = sum(r.expected_prompt_tokens or 0 for rows in own for r in rows)
    assert merged["cache"]["theoretical_hit_rate"] == single["cache"]["theoretical_hit_rate"]
    assert merged["cache"]["theoretical_hit_rate"] > hits / prompt


def test_server_metrics_count_the_one_server_once(runs: dict[str, Any], sim: SimProcess) -> None:
    """Every shard scraped the same serve-sim: its prompt-token counter grew by the shards'
    prompt tokens once, not N times (serve-sim counts every prompt token as a cache query)."""
    merged = runs["merged"]
    assert [s["shards"] for s in merged["server"]["servers"]] == [[f"{i}/{N}" for i in range(N)]]
    assert merged["server"]["queries"] == merged["tokens"]["input"]
    # each shard's own delta holds its traffic and whatever other shards sent meanwhile: adding
    # them up would count the overlap twice (the shards overlap unless a loaded machine made
    # them start late, one after the other)
    for d in runs["shards"]:
        own = summary(d)
        assert own["server"]["queries"] >= own["tokens"]["input"]
    assert merged["cache"]["server_metrics_hit_rate"] is not None


def _served(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return sum(s.value for s in parse_prometheus(text) if s.name.startswith("vllm:request_success"))


def test_sigterm_ends_a_shard_with_partial_results_that_merge(
    runs: dict[str, Any], sim: SimProcess, tmp_path: Path
) -> None:
    """A scheduler's SIGTERM (SLURM time limit, pod eviction) ends a shard like Ctrl-C: it
    writes what it measured and exits 143; the merge takes the partial shard."""
    before = _served(sim.url)
    out = tmp_path / "killed"
    args = replay(sim.url, out, "--shard", f"0/{N}")
    args[args.index("--time-scale") + 1] = "1"  # recorded think times: runs for minutes
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while _served(sim.url) <= before and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    partial = summary(out)
    assert partial["config"]["interrupted"] is True
    assert 1 <= partial["requests"]["total"] < summary(runs["shards"][0])["requests"]["total"]
    merged = merge_results([out, *runs["shards"][1:]]).summary.to_json()
    assert merged["config"]["interrupted"] is True
    assert merged["requests"]["total"] == partial["requests"]["total"] + sum(
        summary(d)["requests"]["total"] for d in runs["shards"][1:]
    )
