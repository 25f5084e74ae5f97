"""simulate on replay's timeline: the pure schedule, the engine in virtual time, and agreement
with serve-sim (the same engine in real time) on the same replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.examples import example_path
from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.engine import EngineParams, ServingEngine
from agentx.prefixcache.hashing import make_hasher
from agentx.replay import ReplayOptions, run_replay
from agentx.schedule import ScheduleOptions
from agentx.serve_sim import SimConfig, SimServer
from agentx.simulate import SimulateOptions, run_simulate
from agentx.simulate.prompts import PromptSource
from agentx.simulate.replayed import SeenIds, run_engine
from agentx.simulate.schedule import SharedSchedule
from agentx.workload.build import BuildConfig
from agentx.workload.plan import build_plan
from agentx.workload.source import open_source

EXAMPLE = example_path("example")
runner = CliRunner()


def _plan():  # type: ignore[no-untyped-def]
    return build_plan(open_source(EXAMPLE))


def _drain(sched: SharedSchedule, service_s: float = 1.0) -> list[tuple[float, int, str, int]]:
    """Run the schedule with every request taking ``service_s``; (sent, lane, thread, turn)."""
    import heapq

    sched.start(0.0)
    running: list[tuple[float, int, object]] = []
    sent = []
    n = 0
    while True:
        t_send = sched.next_due_s()
        t_end = running[0][0] if running else None
        if t_send is None and t_end is None:
            return sent
        if t_end is not None and (t_send is None or t_end <= t_send):
            t, _, s = heapq.heappop(running)
            sched.complete(s, t)  # type: ignore[arg-type]
            continue
        assert t_send is not None
        for s in sched.poll(t_send):
            sent.append((t_send, s.lane, s.session.threads[s.thread].thread_id, s.turn))
            n += 1
            heapq.heappush(running, (t_send + service_s, n, s))


def test_schedule_runs_sessions_one_at_a_time_per_lane_in_trace_order() -> None:
    plan = _plan()
    one = _drain(SharedSchedule(plan.sessions, ScheduleOptions(concurrency=1, time_scale=0)))
    assert len(one) == plan.requests
    assert [t for t, *_ in one] == sorted(t for t, *_ in one)
    two = _drain(SharedSchedule(plan.sessions, ScheduleOptions(concurrency=2, time_scale=0)))
    assert len(two) == plan.requests and {lane for _, lane, *_ in two} == {0, 1}
    assert max(t for t, *_ in two) < max(t for t, *_ in one)  # two lanes finish sooner


def test_schedule_think_time_scale_cap_and_warmup() -> None:
    plan = _plan()
    slow = _drain(SharedSchedule(plan.sessions, ScheduleOptions(time_scale=1.0)))
    capped = _drain(SharedSchedule(plan.sessions, ScheduleOptions(time_scale=1.0, max_think_s=0.5)))
    flat = _drain(SharedSchedule(plan.sessions, ScheduleOptions(time_scale=0.0)))
    assert slow[-1][0] > capped[-1][0] > flat[-1][0]
    assert len(flat) == plan.requests

    sched = SharedSchedule(plan.sessions, ScheduleOptions(concurrency=2, warmup=3, time_scale=0))
    sched.start(0.0)
    sends = []
    while (t := sched.next_due_s()) is not None:
        for s in sched.poll(t):
            sends.append(s)
            sched.complete(s, t + 1)
    warm = [s for s in sends if s.warmup]
    assert len(warm) == 6 and all(s.max_tokens == 1 for s in warm)  # one-token answers
    assert all(s.max_tokens is None for s in sends if not s.warmup)


def test_engine_admits_fcfs_when_the_prompt_fits() -> None:
    eng = ServingEngine(EngineParams(block_size=4, kv_tokens=40, prefill_tps=100, decode_tps=10))
    a = eng.submit(list(range(1, 8)), 30, 10, 0.0)  # 8 blocks, pins the prompt's
    b = eng.submit(list(range(100, 104)), 17, 2, 0.0)  # 5 more blocks: 13 > 10, waits
    assert eng.schedule(0.0) == [a] and eng.waiting == 1
    assert a.admission is not None and a.admission.first_token_s == pytest.approx(0.31)
    eng.finish(a.admission)
    assert eng.schedule(1.0) == [b] and b.admission is not None
    assert b.admission.queue_s == pytest.approx(1.0)


def test_unbounded_engine_equals_the_theoretical_rate_and_hits_shrink_with_capacity() -> None:
    plan = _plan()
    src = PromptSource(
        BuildConfig("chat", "m", {}, True, False), make_hasher(None, 16), plan.source
    )
    rates = []
    for kv in (1 << 40, 12_000, 10_000):
        sched = SharedSchedule(plan.sessions, ScheduleOptions(concurrency=2, time_scale=0))
        run = run_engine(sched, src, EngineParams(block_size=16, kv_tokens=kv))
        rates.append(run.rate(lambda r: r.cached_tokens))
        if kv == 1 << 40:
            assert rates[0] == run.rate(lambda r: r.theoretical_hit_tokens)
    assert rates[0] > rates[1] > rates[2] > 0  # type: ignore[operator]


@pytest.mark.parametrize(("kv", "warmup"), [(1 << 40, 0), (10_000, 2), (10_000, 0)])
def test_a_run_without_records_keeps_their_totals(kv: int, warmup: int) -> None:
    plan = _plan()
    src = PromptSource(
        BuildConfig("chat", "m", {}, True, False), make_hasher(None, 16), plan.source
    )
    options = ScheduleOptions(concurrency=2, time_scale=0, warmup=warmup)
    params = EngineParams(block_size=16, kv_tokens=kv)
    kept = run_engine(SharedSchedule(plan.sessions, options), src, params)
    bare = run_engine(SharedSchedule(plan.sessions, options), src, params, keep_records=False)
    assert bare.records == [] and kept.records
    t, measured = kept.totals, [r for r in kept.records if not r.warmup]
    assert bare.totals == t
    assert (t.requests, t.warmup_requests) == (len(kept.records), len(kept.records) - len(measured))
    assert t.largest_tokens == max(r.prompt_tokens + r.output_tokens for r in kept.records)
    assert t.rate(t.gpu_hit_tokens) == kept.rate(lambda r: r.gpu_hit_tokens)
    assert t.rate(t.gpu_hit_tokens + t.offload_hit_tokens) == kept.rate(lambda r: r.cached_tokens)
    assert t.rate(t.theoretical_hit_tokens) == kept.rate(lambda r: r.theoretical_hit_tokens)
    assert t.prompt_tokens == sum(r.prompt_tokens for r in measured)
    assert (bare.evicted_blocks, bare.duration_s) == (kept.evicted_blocks, kept.duration_s)


@pytest.mark.parametrize(("lanes", "kv_tokens"), [(1, 9_500), (2, 11_000)])
def test_simulate_predicts_serve_sim_on_the_same_replay(
    tmp_path: Path, lanes: int, kv_tokens: int
) -> None:
    """One engine, two front ends: replay against serve-sim and simulate the same replay."""
    cfg = SimConfig.of(
        port=0,
        block_size=16,
        kv_tokens=kv_tokens,
        prefill_tps=2e6,
        decode_tps=2e4,
        overhead_ms=0.5,
        batch_slowdown=0.0,
    )
    with SimServer(cfg) as srv:
        summary = run_replay(
            ReplayOptions.of(
                trace=EXAMPLE,
                endpoint=srv.url,
                concurrency=lanes,
                time_scale=0.0,
                output_dir=tmp_path / "out",
                progress=False,
            )
        ).summary.to_json()
    measured = summary["cache"]["reported_hit_rate"]
    params = cfg.engine
    data = run_simulate(
        SimulateOptions(
            EXAMPLE,
            block_size=16,
            capacities_tokens=(kv_tokens,),
            schedule=ScheduleOptions(concurrency=lanes, time_scale=0),
            engine_params=params,
        )
    ).data.to_json()
    assert data["tokenizer"] == summary["tokenizer"] == "cl100k_base"
    # the salts differ (replay's nonce is random), and so may a token or two per session
    theory = summary["cache"]["theoretical_hit_rate"]
    assert data["theoretical_hit_rate"] == pytest.approx(theory, abs=1e-3)
    predicted = data["points"][0]["hit_rate"]
    if lanes == 1:  # strictly sequential: the same cache operations in the same order
        assert predicted == pytest.approx(measured, abs=2e-3)
    else:  # the interleaving of two lanes depends on real vs modelled timing
        assert predicted == pytest.approx(measured, abs=0.03)
    assert predicted < data["theoretical_hit_rate"]  # the capacity binds


def test_from_results_replays_the_recorded_send_times(tmp_path: Path) -> None:
    with SimServer(SimConfig.of(port=0, block_size=16, kv_tokens=20_000, fast=True)) as srv:
        out = tmp_path / "out"
        summary = run_replay(
            ReplayOptions.of(
                trace=EXAMPLE, endpoint=srv.url, time_scale=0.0, output_dir=out, progress=False
            )
        ).summary.to_json()
    res = runner.invoke(
        app,
        [
            "simulate",
            str(EXAMPLE),
            "--from-results",
            str(out),
            "--kv-blocks",
            "1250",
            "--block-size",
            "16",
            "--fast",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["timeline"] == "results" and data["requests"] == summary["requests"]["total"]
    assert data["points"][0]["capacity_tokens"] == 20_000
    assert data["points"][0]["hit_rate"] == pytest.approx(
        summary["cache"]["reported_hit_rate"], abs=2e-3
    )  # salts differ by a token here and there


def test_cli_replay_timeline_table_and_kv_from(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("INFO [kv_cache_utils.py] GPU KV cache size: 12,288 tokens, Maximum ...\n")
    res = runner.invoke(
        app,
        [
            "simulate",
            str(EXAMPLE),
            "--kv-from",
            str(log),
            "--block-size",
            "128",
            "--time-scale",
            "0",
            "--concurrency",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "12,288" in res.stdout and "replay's schedule: 2 lane(s)" in res.stdout


def test_hash_only_prompts_from_block_ids_match_the_built_text() -> None:
    """A Weka trace: prompts taken from its block ids (the default) and prompts built as replay
    sends them (synthetic text, tokenised) give the same hit rates at a binding capacity."""
    weka = example_path("weka")

    def sim(tokenizer: str | None) -> dict:  # type: ignore[type-arg]
        return run_simulate(
            SimulateOptions(
                weka,
                block_size=64,
                capacities_tokens=(200_000, 300_000),
                schedule=ScheduleOptions(concurrency=2, time_scale=0),
                tokenizer=tokenizer,
            )
        ).data.to_json()

    ids, text = sim(None), sim("cl100k_base")
    assert (ids["prompts"], text["prompts"]) == ("hash ids", "built and tokenised")
    assert ids["requests"] == text["requests"] > 0
    assert ids["theoretical_hit_rate"] == pytest.approx(text["theoretical_hit_rate"], abs=0.005)
    assert ids["footprint_tokens"] == pytest.approx(text["footprint_tokens"], rel=0.01)
    for a, b in zip(ids["points"], text["points"], strict=True):
        assert a["hit_rate"] == pytest.approx(b["hit_rate"], abs=0.01)
    assert ids["points"][0]["hit_rate"] < ids["theoretical_hit_rate"] - 0.05  # it binds


def test_hash_only_trace_defaults_to_its_own_block_size() -> None:
    data = run_simulate(
        SimulateOptions(example_path("weka"), schedule=ScheduleOptions(time_scale=0))
    ).data.to_json()
    assert (data["block_size"], data["prompts"]) == (64, "hash ids")


@pytest.mark.parametrize("scenario", [None, "agentx", "agentx-mvp"])
def test_simulate_schedules_with_replays_options(scenario: str | None) -> None:
    """simulate's rules from a preset and flags are the very ScheduleOptions replay's lanes get
    from the same preset and flags (one worker, no shard)."""
    from types import SimpleNamespace

    from agentx.replay.options import scenario_options
    from agentx.replay.setup import lane_config
    from agentx.simulate.options import simulate_options

    flags = {
        "concurrency": 3,
        "time_scale": 0.5,
        "max_requests": 40,
        "burst": True,
        "spawn_join": "harness",
        "trace_idle_cap_s": 30.0,
        "seed": None if scenario == "agentx" else 7,  # agentx-mvp draws one otherwise
    }
    so = simulate_options(scenario, trace=EXAMPLE, **flags)
    ro = scenario_options(scenario, trace=EXAMPLE, endpoint="http://127.0.0.1:1/v1", **flags)
    setup = SimpleNamespace(options=ro, build=None, nonce="n")
    replays = lane_config(setup, (0, 1, 2), ro.schedule.max_requests, 0)  # type: ignore[arg-type]
    assert so.schedule == replays.schedule and so.workload.seed == replays.seed
    assert replays.lanes == tuple(range(so.schedule.concurrency))
    if scenario == "agentx":
        assert replays.schedule.start_ratio == (0.25, 0.75) and replays.schedule.warmup == 10


def test_cli_simulate_takes_a_scenario() -> None:
    args = "simulate weka --scenario agentx --concurrency 2 --duration 120 --capacity-tokens 1M"
    res = runner.invoke(app, [*args.split(), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    sched = data["schedule"]
    assert sched["start_ratio"] == [0.25, 0.75] and sched["warmup"] == 10
    assert (sched["duration_s"], sched["seed"], sched["system_idle_cap_s"]) == (120.0, 42, 10.0)
    assert data["warmup_requests"] > 0 and data["requests"] > 0


@pytest.mark.parametrize("concurrency", [1, 3])
def test_capacities_above_an_unbounded_behaving_one_are_derived_exactly(concurrency: int) -> None:
    """Once a capacity refilled nothing and kept nobody waiting, larger ones are not run: their
    points (hit rates, evictions, waiting, duration) equal what running them gives."""

    def sim(derive: bool) -> dict:  # type: ignore[type-arg]
        return run_simulate(
            SimulateOptions(
                example_path("weka"),
                block_size=64,
                capacities_tokens=(2_000_000, 100_000, 400_000, 250_000, 800_000),
                offload_tokens=200_000,
                schedule=ScheduleOptions(concurrency=concurrency, time_scale=0),
                run_all=not derive,
            )
        ).data.to_json()

    derived, ran = sim(True), sim(False)
    assert [p["capacity_tokens"] for p in derived["points"]] == [
        p["capacity_tokens"] for p in ran["points"]
    ]
    shortcut = [p for p in derived["points"] if p.pop("as_unbounded", False)]
    assert shortcut, "no capacity was derived: the test needs one"
    assert derived["points"] == ran["points"]
    gpu = [p for p in ran["points"] if not p["offload_tokens"]]
    if concurrency == 1:  # one lane: the derived capacities still evict (the old sessions)
        assert any(p["evicted_blocks"] for p in shortcut)
    assert min(p["hit_rate"] for p in gpu) < max(p["hit_rate"] for p in gpu)  # some bind


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30), st.integers(0, 40)), max_size=40),
    st.sampled_from([1, 4, 16]),
)
def test_seen_ids_is_the_unbounded_prefix_cache(turns: list[tuple[int, int, int]], bs: int) -> None:
    """The theoretical cache over dense ids gives UnboundedPrefixCache's hits, request by
    request, on chains of ids (each a thread's prefix plus fresh blocks)."""
    threads: dict[int, list[int]] = {}
    seen, ref = SeenIds(bs), UnboundedPrefixCache(bs)
    nxt = 1
    for thread, keep, add in turns:
        ids = threads.get(thread, [])[:keep] + list(range(nxt, nxt + add))
        nxt += add
        threads[thread] = ids
        arr = np.asarray(ids, dtype=np.int32)
        prompt = len(ids) * bs + (thread % 3)  # a partial last block, or none
        assert seen.observe(arr, prompt) == ref.observe(arr.astype(np.uint64), prompt).hit_tokens
