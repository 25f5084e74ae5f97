"""--scenario presets: what they set, explicit values win, the alias, the printed line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentx.core.errors import UsageError
from agentx.replay.options import describe, scenario_options
from agentx.schedule.options import parse_ratio

BASE = {"trace": Path("t.parquet"), "endpoint": "http://127.0.0.1:1"}


def test_agentx_preset_is_the_harness_default() -> None:
    o = scenario_options("agentx", **BASE)
    s, w = o.schedule, o.workload
    assert (w.scenario, s.duration_s, s.start_ratio, s.warmup, w.seed) == (
        "agentx",
        3600.0,
        (0.25, 0.75),
        10,
        42,
    )
    assert (s.trace_idle_cap_s, s.system_idle_cap_s, o.max_failed_ratio, o.min_coverage) == (
        300.0,
        10.0,
        0.1,
        0.95,
    )
    assert o.ignore_eos is True and w.salt is True and o.timeout_s == 21600.0
    assert s.max_think_s is None and s.spawn_join == "recorded"
    # conversation_num_dataset_entries: the harness loads the first 393 traces of a corpus
    assert w.max_entries == 393
    assert scenario_options("agentx", **BASE, max_entries=700).workload.max_entries == 700
    assert scenario_options("agentx-mvp", **BASE).workload.max_entries is None


def test_explicit_options_win_and_none_means_not_given() -> None:
    o = scenario_options("agentx", **BASE, duration_s=60.0, warmup=0, seed=None, salt=False)
    assert (o.schedule.duration_s, o.schedule.warmup, o.workload.seed, o.workload.salt) == (
        60.0,
        0,
        42,
        False,
    )
    plain = scenario_options(None, **BASE, seed=None, warmup=None)
    # no --seed: the draws use 0, and the markers are drawn afresh (docs/replay.md)
    assert (plain.workload.scenario, plain.workload.seed, plain.workload.rng_seed) == (
        None,
        None,
        0,
    )
    assert (plain.schedule.warmup, plain.schedule.start_ratio) == (0, (0.0, 0.0))


def test_mvp_alias_and_its_random_seed() -> None:
    a = scenario_options("inferencex-agentx-mvp", **BASE)
    b = scenario_options("agentx-mvp", **BASE)
    assert a.workload.scenario == b.workload.scenario == "agentx-mvp"
    s = a.schedule
    assert (s.duration_s, s.start_ratio, s.warmup, s.trace_idle_cap_s) == (1800.0, (0, 1), 0, None)
    assert (
        a.workload.seed != b.workload.seed
    )  # drawn per run (written to summary.json), unless given
    assert scenario_options("agentx-mvp", **BASE, seed=7).workload.seed == 7
    with pytest.raises(UsageError, match="--scenario must be one of agentx, agentx-mvp"):
        scenario_options("nope", **BASE)


def test_describe_and_ratio_parsing() -> None:
    line = describe(scenario_options("agentx", **BASE))
    assert line.startswith("scenario agentx: duration 3600 s, concurrency 1, start ratio 0.25:0.75")
    assert "trace idle cap 300 s" in line and "seed 42" in line
    assert parse_ratio("0.25:0.75") == (0.25, 0.75) and parse_ratio("0.3") == (0.3, 0.3)
    for bad in ("0.8:0.2", "a:b", "0:2", "1:2:3"):
        with pytest.raises(UsageError, match="--start-ratio"):
            parse_ratio(bad)
