"""`agentx simulate`: the stack engine against serve-sim's KVCache, the properties of the hit-rate
curve, agreement with `agentx stats`, and the command line."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentx.apis import Api
from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.core.models import Exchange, Timing, Usage
from agentx.prefixcache.hashing import chain_ids
from agentx.simulate import (
    SimulateOptions,
    default_capacities,
    simulate_workload,
    stack,
)
from agentx.simulate.stack import Fenwick, kvcache_simulate, stack_simulate
from agentx.simulate.workload import RawRequest, Workload, build_workload, raw_requests
from agentx.workload.stats import compute_stats, summarize

ROOT = Path(__file__).parents[2]
WEKA = example_path("weka")
EXAMPLE = example_path("example")
runner = CliRunner()
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- generated traces ---------------------------------------------------------------------------


@st.composite
def traces(draw: st.DrawFn, aligned: bool = False, bs: int = 4) -> list[RawRequest]:
    """Sessions that grow, branch back (compaction, subagents) and share a system prefix."""
    n_sessions = draw(st.integers(1, 4))
    system = draw(st.lists(st.integers(0, 3), max_size=4))
    convs: list[list[int]] = [list(system) for _ in range(n_sessions)]
    out: list[RawRequest] = []
    t = 0
    for _ in range(draw(st.integers(1, 30))):
        s = draw(st.integers(0, n_sessions - 1))
        if draw(st.booleans()) and draw(st.booleans()):
            convs[s] = convs[s][: draw(st.integers(0, len(convs[s])))]
        convs[s] = (
            convs[s]
            + [1000 * (s + 1) + draw(st.integers(0, 50)) for _ in range(3)][
                : draw(st.integers(0, 3))
            ]
        )
        convs[s] = convs[s] or [1000 * (s + 1)]  # at least one block: a whole-block prompt
        ids = np.asarray(convs[s], dtype=np.int64)
        n = ids.size * bs + (0 if aligned else draw(st.integers(0, bs - 1)))
        t += draw(st.integers(0, 4))
        out.append(
            RawRequest(
                hashes=chain_ids(ids),
                prompt_tokens=n,
                output_tokens=0 if aligned else draw(st.integers(0, 3 * bs)),
                start_ns=t,
                duration_ns=draw(st.sampled_from([None, 0, 1, 3, 10])),
                session=str(s),
            )
        )
    return out


@FAST
@given(st.integers(1, 200), st.data())
def test_fenwick_matches_a_plain_array(n: int, data: st.DataObject) -> None:
    fen, counts = Fenwick(n), np.zeros(n + 1, dtype=np.int64)
    for _ in range(data.draw(st.integers(1, 12))):
        if data.draw(st.booleans()):
            a = data.draw(st.integers(1, n))
            b = data.draw(st.integers(a, n))
            fen.add_range(a, b, 1)
            counts[a : b + 1] += 1
        else:
            pos = sorted(data.draw(st.sets(st.integers(1, n), max_size=n)))
            arr = np.asarray(pos, dtype=np.int64)
            fen.add_points(arr, -1)
            counts[arr] -= 1
        q = np.arange(n + 1, dtype=np.int64)
        assert fen.prefix(q).tolist() == np.cumsum(counts).tolist()


@FAST
@given(st.integers(1, 200), st.data())
def test_fenwick_of_ones_is_a_prefix_of_ones(n: int, data: st.DataObject) -> None:
    live = data.draw(st.integers(0, n))
    q = np.arange(n + 1, dtype=np.int64)
    assert Fenwick.ones(n, live).prefix(q).tolist() == np.minimum(q, live).tolist()


@FAST
@given(traces(), st.booleans(), st.booleans(), st.integers(0, 8))
def test_renumbering_the_free_queue_changes_no_hit(
    raw: list[RawRequest], pin: bool, reserve: bool, spare: int
) -> None:
    """The engine renumbers the free queue's live entries when its positions run out: with as
    few positions as that allows (renumbering at almost every release), every figure is what
    one position per entry ever released gives."""
    w = build_workload(raw, 4)
    caps = list(range(0, 2 * (w.unique_blocks + 8 * len(raw)) + 3))
    full = stack_simulate(w, caps, 6, pin=pin, reserve_output=reserve)
    tight = stack.queue_slots

    def fewest(workload: Workload, anon: Sequence[int]) -> int:
        live = workload.unique_blocks + sum(anon)
        largest = max(int(r.blocks.size) + a for r, a in zip(workload.requests, anon, strict=True))
        return min(tight(workload, anon), live + largest + spare)

    with mock.patch.object(stack, "queue_slots", fewest):
        assert stack_simulate(w, caps, 6, pin=pin, reserve_output=reserve) == full


@FAST
@given(traces(), st.booleans(), st.booleans())
def test_stack_engine_equals_kvcache_replay(
    raw: list[RawRequest], pin: bool, reserve: bool
) -> None:
    """The one-pass engine is serve-sim's cache exactly, partial blocks and reserved output
    included (both queue freed unnamed blocks as vLLM does), with or without pinning, at every
    capacity (also over-committed ones)."""
    w = build_workload(raw, 4)
    caps = list(range(0, 2 * (w.unique_blocks + 8 * len(raw)) + 3))
    res = stack_simulate(w, caps, pin=pin, reserve_output=reserve)
    for cap, hit in zip(res.capacities_blocks, res.gpu_hit_blocks, strict=True):
        ref = kvcache_simulate(w, cap * 4, pin=pin, reserve_output=reserve)
        assert ref.gpu_hit_tokens == hit * 4, cap


@FAST
@given(traces(aligned=True), st.booleans(), st.integers(1, 12))
def test_kvcache_victim_tier_lies_between_inclusive_and_exclusive(
    raw: list[RawRequest], pin: bool, offload: int
) -> None:
    w = build_workload(raw, 4)
    caps = list(range(0, w.unique_blocks + 2))
    res = stack_simulate(w, caps, offload, pin=pin, reserve_output=False)
    assert res.inclusive_hit_blocks is not None and res.exclusive_hit_blocks is not None
    for k, cap in enumerate(caps):
        ref = kvcache_simulate(w, cap * 4, offload * 4, pin=pin, reserve_output=False)
        both = (ref.gpu_hit_tokens + ref.offload_hit_tokens) // 4
        assert res.inclusive_hit_blocks[k] <= both <= res.exclusive_hit_blocks[k]
        assert ref.gpu_hit_tokens == res.gpu_hit_blocks[k] * 4  # the GPU tier is unaffected


@FAST
@given(traces(), st.booleans(), st.booleans(), st.sampled_from(["inclusive", "exclusive"]))
def test_curve_is_monotone_reaches_the_limit_and_offload_never_hurts(
    raw: list[RawRequest], pin: bool, reserve: bool, policy: str
) -> None:
    w = build_workload(raw, 4)
    caps = tuple(range(0, 4 * (w.unique_blocks + len(raw) * 8) + 8, 4))
    opts = SimulateOptions(
        Path("-"),
        capacities_tokens=caps,
        offload_tokens=12,
        pin=pin,
        reserve_output=reserve,
        offload_policy=policy,  # type: ignore[arg-type]
    )
    data = simulate_workload(w, opts).data.to_json()
    gpu = [p for p in data["points"] if p["offload_tokens"] == 0]
    both = [p for p in data["points"] if p["offload_tokens"]]
    rates = [p["hit_rate"] for p in gpu]
    assert rates == sorted(rates)
    assert [p["hit_rate"] for p in both] == sorted(p["hit_rate"] for p in both)
    th = data["theoretical_hit_rate"]
    assert rates[-1] == th and max(p["hit_rate"] for p in both) <= th
    reached = data["capacity_for_theoretical_tokens"]
    assert all(p["hit_rate"] == th for p in gpu if p["capacity_tokens"] >= reached)
    assert all(p["hit_rate"] < th for p in gpu if p["capacity_tokens"] < reached)
    for g, b in zip(gpu, both, strict=True):
        assert b["gpu_hit_rate"] == g["hit_rate"]
        assert b["hit_rate"] >= g["hit_rate"] and b["offload_hit_rate"] >= 0


# -- agreement with `agentx stats` -------------------------------------------------------------


def _weka_exchanges(raw: list[RawRequest], ids: list[list[int]]) -> list[Exchange]:
    return [
        Exchange(
            request_id=f"r{i}",
            session_id=r.session,
            thread_id="main",
            api=Api.OPENAI_CHAT,
            request={},
            timing=Timing(start_wall_ns=r.start_ns, e2e_ns=r.duration_ns),
            usage=Usage(prompt_tokens=r.prompt_tokens, completion_tokens=r.output_tokens),
            hash_ids=tuple(ids[i]),
            hash_block_size=4,
        )
        for i, r in enumerate(raw)
    ]


@FAST
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 5)), max_size=25))
def test_theoretical_equals_stats_on_generated_hash_only_traces(
    steps: list[tuple[int, int, int]],
) -> None:
    convs: dict[int, list[int]] = {}
    raw, ids = [], []
    for t, (s, keep, grow) in enumerate(steps):
        conv = convs.get(s, [7, 8])[:keep] + [100 * s + t + k for k in range(grow)]
        convs[s] = conv
        ids.append(conv)
        raw.append(RawRequest(chain_ids(conv), len(conv) * 4 - t % 3, 2, t, 5, str(s)))
    exchanges = _weka_exchanges(raw, ids)
    stats = summarize(exchanges).to_json()
    got, bs = raw_requests(exchanges)
    if not sum(r.prompt_tokens for r in got):
        return  # nothing to rate (stats says None; simulate refuses such a trace)
    data = simulate_workload(build_workload(got, bs), SimulateOptions(Path("-"))).data.to_json()
    assert bs == stats["block_size"] == data["block_size"]
    assert data["theoretical_hit_rate"] == stats["theoretical_hit_rate"]


@pytest.mark.parametrize(
    ("trace", "block_size"),
    [
        (WEKA / "trace_0001.json", None),
        (WEKA / "trace_0010_head.json", 128),
        (WEKA, None),
        (EXAMPLE, None),
        (EXAMPLE, 32),
    ],
)
def test_theoretical_equals_agentx_stats(trace: Path, block_size: int | None) -> None:
    args = ["simulate", str(trace), "--timeline", "recorded", "--json", "--capacity-tokens", "1M"]
    if block_size:
        args += ["--block-size", str(block_size)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    stats = compute_stats(trace, block_size=block_size).to_json()
    assert data["block_size"] == stats["block_size"]
    assert data["theoretical_hit_rate"] == stats["theoretical_hit_rate"]


def test_sessions_run_concurrently_in_start_order() -> None:
    """Two sessions interleaved in time: the one listed second starts first."""
    a = RawRequest(chain_ids([1, 2, 3]), 12, 0, 10, 0, "a")
    b = RawRequest(chain_ids([1, 2, 9]), 12, 0, 5, 0, "b")
    w = build_workload([a, b], 4)
    assert [r.start_ns for r in w.requests] == [5, 10]
    assert w.unique_blocks == 4 and w.sessions == 2


def test_mixed_block_sizes_are_refused() -> None:
    raw = [RawRequest(chain_ids([1]), 4, 0, 0, None)]
    ex = _weka_exchanges(raw, [[1]])[0]
    text = Exchange(
        request_id="t",
        session_id="s",
        thread_id="t",
        api=Api.OPENAI_CHAT,
        request={"messages": [{"role": "user", "content": "hello " * 40}]},
        timing=Timing(start_wall_ns=1),
    )
    with pytest.raises(UsageError, match="--block-size 16"):
        raw_requests([ex, text])  # hash rows at 4, text rows at the default 16


def test_pinning_protects_running_requests() -> None:
    """A long request's prefix survives a burst of other traffic only while it runs."""
    bs = 4
    shared = chain_ids([1, 2, 3, 4])
    burst = [RawRequest(chain_ids([50 + k, 60 + k]), 8, 0, 2 + k, 0, "x") for k in range(4)]
    again = RawRequest(shared, 16, 0, 10, 0, "a")
    for duration, expect in ((20, 12), (1, 0)):
        first = RawRequest(shared, 16, 0, 0, duration, "a")
        w = build_workload([first, *burst, again], bs)
        res = stack_simulate(w, [4], pin=True, reserve_output=False)
        assert res.gpu_hit_blocks[0] * bs == expect


# -- parsing and defaults -----------------------------------------------------------------------


@given(st.sampled_from([1, 4, 16, 64, 512]), st.integers(1, 10**9))
def test_default_capacities_sweep_up_to_the_footprint(bs: int, footprint: int) -> None:
    caps = default_capacities(bs, footprint)
    assert list(caps) == sorted(set(caps)) and caps[-1] == max(footprint, bs)
    assert caps[0] >= min(4 * bs, caps[-1])
    assert all(b / a <= 2.5 + 1e-9 for a, b in itertools.pairwise(caps))


# -- the command --------------------------------------------------------------------------------


def test_cli_json_table_and_plot(tmp_path: Path) -> None:
    trace = WEKA / "trace_0010_head.json"
    res = runner.invoke(
        app,
        ["simulate", str(trace), "--timeline", "recorded", "--json", "--offload-tokens", "500K"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schema"] == "agentx.simulate/1" and data["block_size"] == 64
    point_keys = {"capacity_tokens", "offload_tokens", "hit_rate", "gpu_hit_rate"}
    for p in data["points"]:
        assert point_keys | {"offload_hit_rate"} <= set(p)
    assert {p["offload_tokens"] for p in data["points"]} == {0, 500_000}
    assert data["points"][-1]["capacity_tokens"] == data["footprint_tokens"]

    plot = tmp_path / "curve.svg"
    res = runner.invoke(
        app,
        [
            "simulate",
            str(trace),
            "--timeline",
            "recorded",
            "--capacity-tokens",
            "64K,1M",
            "--plot",
            str(plot),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "theoretical hit rate" in res.stdout and "64,000" in res.stdout
    root = ET.fromstring(plot.read_text())
    assert root.tag.endswith("svg") and "<style>" in plot.read_text()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--capacity-tokens", "lots"], 2),
        (["--offload-tokens", "-1"], 2),
        (["--offload-policy", "both"], 2),
        (["--plot", "x.png"], 2),
        (["--block-size", "0"], 2),
        (["--timeline", "recorded", "--block-size", "51"], 2),
        (["--timeline", "recorded", "--tokenizer", "server"], 2),
        (["--timeline", "sometimes"], 2),
        (["--kv-blocks", "0"], 2),
        (["--kv-blocks", "8", "--capacity-tokens", "1M"], 2),
        (["--tokenizer", "server"], 2),
        (["--tokenizer", "/no/such/dir"], 2),
    ],
)
def test_cli_usage_errors(args: list[str], code: int) -> None:
    res = runner.invoke(app, ["simulate", str(WEKA / "trace_0010_head.json"), *args])
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output


def test_cli_missing_trace(tmp_path: Path) -> None:
    res = runner.invoke(app, ["simulate", str(tmp_path / "nope.parquet")])
    assert res.exit_code == 1 and "no such file" in res.output


@pytest.mark.parametrize("flag", ["--cache-model", "--engine"])  # --engine: its old spelling
def test_kvcache_cache_model_from_the_command_line(flag: str) -> None:
    trace = WEKA / "trace_0010_head.json"
    args = ["simulate", str(trace), "--timeline", "recorded", "--json"]
    args += ["--capacity-tokens", "100K", "--offload-tokens", "1M"]
    fast = json.loads(runner.invoke(app, args).stdout)
    assert fast["model"]["cache_model"] == fast["model"]["engine"] == "stack"
    ref = json.loads(runner.invoke(app, [*args, flag, "kvcache"]).stdout)
    assert ref["model"]["cache_model"] == ref["model"]["engine"] == "kvcache"
    assert ref["model"]["offload_policy"] == "victim"
    assert ref["theoretical_hit_rate"] == fast["theoretical_hit_rate"]
    # both free unnamed blocks into the LRU order: the GPU tier is the same exactly
    assert ref["points"][0]["gpu_hit_rate"] == fast["points"][0]["gpu_hit_rate"]


@pytest.mark.parametrize("trace", [WEKA, EXAMPLE])
def test_streamed_loading_equals_building_from_raw_requests(trace: Path) -> None:
    """load_workload renumbers as it reads (trace order) and keeps ids as runs; the
    engine sees the same workload as from raw_requests + build_workload (start order)."""
    from agentx.formats import load_exchanges
    from agentx.simulate.workload import load_workload

    streamed = load_workload(trace)
    raw, bs = raw_requests(load_exchanges(trace))
    built = build_workload(raw, bs)
    assert (streamed.unique_blocks, streamed.block_size) == (built.unique_blocks, bs)
    caps = [0, 64, 4096, 10**6]
    assert stack_simulate(streamed, caps) == stack_simulate(built, caps)
    kept = sum(r.runs.nbytes for r in streamed.requests)
    # a request's appended blocks are numbered in order: far fewer runs than ids
    assert kept < 0.6 * sum(r.blocks.nbytes for r in streamed.requests)
