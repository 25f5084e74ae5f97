"""Options declared once on their dataclass fields: flat values in and out, one name per flag
across embedded groups, presets and profiles naming real options, choices as StrEnums, one
token-count parser for every flag that takes a token count."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.core.errors import UsageError
from agentx.core.options import (
    build,
    command_args,
    declared,
    flat,
    names,
    parse_token_list,
    parse_tokens,
)
from agentx.metrics.cost import CostInputs
from agentx.replay.options import ReplayOptions
from agentx.schedule.options import ScheduleOptions, SpawnJoin
from agentx.serve_sim.config import PROFILES, SimConfig
from agentx.simulate.options import SimulateOptions
from agentx.workload.options import ApiMode
from agentx.workload.scenario import PRESETS

OPTION_CLASSES = [ReplayOptions, SimulateOptions, SimConfig, CostInputs, ScheduleOptions]
BASE = {"trace": Path("t.parquet"), "endpoint": "http://127.0.0.1:1"}


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda c: c.__name__)
def test_each_flat_name_and_each_flag_is_declared_once(cls: type) -> None:
    assert len(names(cls)) == len(set(names(cls)))  # names() raises on a name given twice
    spelt = [n for d in declared(cls) for n in d.flag.names + d.flag.hidden]
    assert len(spelt) == len(set(spelt)), sorted(n for n in spelt if spelt.count(n) > 1)


def test_flat_values_build_the_embedded_groups_and_come_back() -> None:
    o = ReplayOptions.of(**BASE, concurrency=3, trace_idle_cap_s=30.0, seed=5, api="messages")
    assert (o.schedule.concurrency, o.schedule.trace_idle_cap_s) == (3, 30.0)
    assert (o.workload.seed, o.workload.api) == (5, ApiMode.MESSAGES)
    values = flat(o)
    assert list(values)[:4] == ["trace", "endpoint", "model", "concurrency"]
    assert build(ReplayOptions, values) == o
    with pytest.raises(TypeError, match="no kv_tokens"):
        ReplayOptions.of(**BASE, kv_tokens=1)


def test_a_panel_filter_keeps_the_rest_of_a_group_at_its_defaults() -> None:
    o = SimulateOptions.of(trace=Path("t"), block_size=64, prefill_tps=5000.0, fast=True)
    assert (
        o.block_size == 64 and o.engine_params.block_size == 16
    )  # simulate's own, not the engine's
    assert (o.engine_params.prefill_tps, o.engine_params.fast) == (5000.0, True)
    assert "kv_tokens" not in names(SimulateOptions)


def test_presets_and_profiles_name_declared_options() -> None:
    for preset in PRESETS.values():
        assert set(preset) <= set(names(ReplayOptions))
    for profile in PROFILES.values():
        assert set(profile) <= set(names(SimConfig))


def test_choices_are_str_enums_and_a_bad_one_is_a_usage_error() -> None:
    s = ScheduleOptions(spawn_join="harness")  # type: ignore[arg-type]  # as a caller may
    assert s.spawn_join is SpawnJoin.HARNESS and s.spawn_join == "harness"
    with pytest.raises(UsageError, match="--api must be chat, messages or native"):
        ReplayOptions.of(**BASE, api="grpc")
    with pytest.raises(UsageError, match="--spawn-join must be recorded or harness"):
        ScheduleOptions(spawn_join="later")  # type: ignore[arg-type]


def test_command_args_reproduce_the_options_that_differ() -> None:
    config = SimConfig.of(port=0, decode_tps=400.0, fast=True)
    assert command_args(config, SimConfig()) == ["--port", "0", "--decode-tps", "400.0", "--fast"]


def test_flat_values_of_a_filtered_group_are_the_ones_it_takes() -> None:
    o = SimulateOptions.of(trace=Path("t"), block_size=64, decode_tps=100.0)
    values = flat(o)
    assert values["block_size"] == 64 and values["decode_tps"] == 100.0
    assert list(values) == list(names(SimulateOptions))
    assert build(SimulateOptions, values) == o


# -- token counts: one parser for every flag that takes one --------------------------------------


def test_parse_tokens() -> None:
    assert parse_tokens("64K") == 64_000 and parse_tokens("1.5M") == 1_500_000
    assert parse_tokens("64Ki") == 65_536 and parse_tokens("160_000") == 160_000
    assert parse_token_list("16,64k, 1M") == (16, 64_000, 1_000_000)
    for bad in ("", "x", "-5", "1T", "1e6"):
        with pytest.raises(ValueError, match="token count"):
            parse_token_list(bad)


@given(st.integers(0, 10**12))
def test_parse_tokens_round_trips_integers(n: int) -> None:
    assert parse_tokens(str(n)) == n and parse_tokens(n) == n


# every flag whose field counts tokens (a KV capacity, a context, an answer length)
TOKEN_FIELDS = {
    SimConfig: {
        "kv_tokens",
        "offload_tokens",
        "max_model_len",
        "eos_tokens",
        "default_max_tokens",
    },
    SimulateOptions: {"capacities_tokens", "offload_tokens"},
}


@pytest.mark.parametrize("cls", list(TOKEN_FIELDS), ids=lambda c: c.__name__)
def test_every_token_count_flag_reads_suffixes_with_the_one_parser(cls: type) -> None:
    flags = {d.name: d.flag for d in declared(cls)}
    counted = {n for n in flags if n.endswith("_tokens") or n == "max_model_len"}
    assert counted == TOKEN_FIELDS[cls]  # a new token-count flag is listed here
    for name in counted:
        flag = flags[name]
        assert flag.parse in (parse_tokens, parse_token_list), name
        one = flag.value("1M")
        assert one in (1_000_000, (1_000_000,)) and flag.value("2Ki") in (2048, (2048,))
        with pytest.raises(UsageError, match=f"^{flag.name}: '1X' is not a token count"):
            flag.value("1X")
