"""Weka JSON import: sessions, subagent threads, timing, hash ids, clear errors, fuzzing."""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentx.core.errors import FormatError
from agentx.core.examples import example_path
from agentx.core.models import Exchange
from agentx.formats import load_exchanges
from agentx.formats.weka import LOCAL_SCOPE_STRIDE, iter_weka, parse_weka, read_weka_file
from agentx.store import read_trace, write_trace

DATA = example_path("weka")
T1 = DATA / "trace_0001.json"
T10 = DATA / "trace_0010_head.json"


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_a_file_is_one_session_with_a_chained_main_thread() -> None:
    doc = _doc(T1)
    trace = read_weka_file(T1)
    exs = trace.exchanges
    assert (trace.id, trace.block_size, trace.hash_id_scope) == ("trace_0001", 64, "local")
    assert len(exs) == len(doc["requests"]) == 41
    assert {ex.session_id for ex in exs} == {"trace_0001"}
    assert {ex.thread_id for ex in exs} == {"trace_0001/main"}
    assert exs[0].parent_request_id is None
    assert all(b.parent_request_id == a.request_id for a, b in pairwise(exs))
    for ex, req in zip(exs, doc["requests"], strict=True):
        assert ex.api == "openai.chat" and ex.request == {}
        assert ex.hash_ids == tuple(req["hash_ids"]) and ex.hash_block_size == 64
        assert (ex.usage.prompt_tokens, ex.usage.completion_tokens) == (req["in"], req["out"])
        assert ex.usage.cached_tokens is None  # not in the file: unknown, not 0
        assert ex.timing.start_wall_ns == round(req["t"] * 1e9)
        assert ex.think_time_s == req["think_time"] and ex.api_time_s == req["api_time"]
        assert ex.timing.e2e_ns == round(req["api_time"] * 1e9)
        assert ex.model == req["model"] and ex.response.stop_reason == req["stop"]
        assert f"weka.type={req['type']}" in ex.flags
        assert {f"weka.in={x}" for x in req["input_types"]} <= set(ex.flags)
        assert {f"weka.out={x}" for x in req["output_types"]} <= set(ex.flags)


def test_subagents_are_child_threads_offset_by_their_start() -> None:
    doc = _doc(T10)
    exs = read_weka_file(T10).exchanges
    subs = [r for r in doc["requests"] if r["type"] == "subagent"]
    threads = {ex.thread_id for ex in exs}
    assert threads == {"trace_0010_head/main"} | {f"trace_0010_head/{s['agent_id']}" for s in subs}
    assert len(exs) == sum(1 for r in doc["requests"] if r["type"] != "subagent") + sum(
        len(s["requests"]) for s in subs
    )
    for sub in subs:
        mine = [ex for ex in exs if ex.thread_id == f"trace_0010_head/{sub['agent_id']}"]
        assert [ex.timing.start_wall_ns for ex in mine] == [
            round((sub["t"] + r["t"]) * 1e9) for r in sub["requests"]
        ]
        # the spawning turn: the last main request before the entry in the file
        before = doc["requests"][: doc["requests"].index(sub)]
        n_main = sum(1 for r in before if r["type"] != "subagent")
        assert mine[0].parent_request_id == f"trace_0010_head/main/{n_main - 1}"
        assert f"weka.duration_ms={sub['duration_ms']}" in mine[0].flags
        assert all(b.parent_request_id == a.request_id for a, b in pairwise(mine))
        assert all(
            "subagent" in ex.flags and f"weka.subagent_type={sub['subagent_type']}" in ex.flags
            for ex in mine
        )
    starts = [ex.timing.start_wall_ns for ex in exs]
    assert starts == sorted(starts)  # interleaved in time, as they ran


def test_stream_type_and_ttft_are_kept(tmp_path: Path) -> None:
    doc = {
        "id": "x",
        "block_size": 64,
        "requests": [
            {"t": 1.5, "type": "s", "in": 100, "out": 5, "hash_ids": [1], "ttft": 0.25, "stop": ""},
        ],
    }
    (ex,) = parse_weka(doc, tmp_path / "x.json").exchanges
    assert ex.timing.ttft_ns == 250_000_000 and ex.timing.start_wall_ns == 1_500_000_000
    assert ex.response.stop_reason is None and "weka.type=s" in ex.flags
    assert ex.think_time_s is None and ex.api_time_s is None  # absent: unknown


def test_a_directory_is_one_session_per_file_with_local_ids_kept_apart(tmp_path: Path) -> None:
    shutil.copy(T1, tmp_path / "a.json")
    shutil.copy(T10, tmp_path / "b.json")
    (tmp_path / "README.md").write_text("not a trace")
    exs = list(load_exchanges(tmp_path))
    assert {ex.session_id for ex in exs} == {"trace_0001", "trace_0010_head"}
    first = [ex for ex in exs if ex.session_id == "trace_0001"]
    second = [ex for ex in exs if ex.session_id == "trace_0010_head"]
    assert first[0].hash_ids == tuple(
        _doc(T1)["requests"][0]["hash_ids"]
    )  # the first file keeps its ids
    assert second[0].hash_ids is not None
    assert min(second[0].hash_ids) >= LOCAL_SCOPE_STRIDE  # local scope: no false sharing


def test_global_scope_ids_are_kept_in_a_directory(tmp_path: Path) -> None:
    for name in ("a", "b"):
        doc = {
            "id": name,
            "block_size": 16,
            "hash_id_scope": "global",
            "requests": [{"t": 0, "in": 40, "out": 1, "hash_ids": [7, 8]}],
        }
        (tmp_path / f"{name}.json").write_bytes(orjson.dumps(doc))
    assert [ex.hash_ids for ex in iter_weka(tmp_path)] == [(7, 8), (7, 8)]


def test_imported_exchanges_survive_the_store(tmp_path: Path) -> None:
    exs = list(load_exchanges(T10))
    write_trace(tmp_path / "t.parquet", exs, trace_id="w")
    assert read_trace(tmp_path / "t.parquet") == [replace(ex, trace_id="w") for ex in exs]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["requests"][3].__setitem__("in", "many"),
            r"requests\[3\]\.in: expected a non-negative integer",
        ),
        (lambda d: d["requests"][0].__setitem__("hash_ids", [1, "x"]), r"requests\[0\]\.hash_ids"),
        (lambda d: d["requests"][2].__setitem__("t", -1), r"requests\[2\]\.t"),
        (lambda d: d.__setitem__("block_size", 0), r"block_size"),
        (lambda d: d.pop("requests"), "not a Weka trace"),
        (lambda d: d["requests"].__setitem__(5, [1, 2]), r"requests\[5\]: expected an object"),
        (lambda d: d["requests"][1].__setitem__("in", True), r"requests\[1\]\.in"),
    ],
)
def test_bad_records_are_named(tmp_path: Path, mutate: Any, message: str) -> None:
    doc = _doc(T1)
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps(doc))
    with pytest.raises(FormatError, match=message) as info:
        read_weka_file(bad)
    assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_nested_subagent_entries_are_an_error(tmp_path: Path) -> None:
    inner = {"t": 0, "type": "subagent", "requests": []}
    doc = {"block_size": 64, "requests": [{"t": 0, "type": "subagent", "requests": [inner]}]}
    with pytest.raises(FormatError, match="nested"):
        parse_weka(doc, tmp_path / "n.json")


def test_invalid_json_and_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "half.json"
    bad.write_bytes(T1.read_bytes()[:1000])
    with pytest.raises(FormatError, match="not valid JSON"):
        read_weka_file(bad)
    with pytest.raises(FormatError, match="cannot read"):
        read_weka_file(tmp_path / "missing.json")


# ---- fuzzing: anything at all is either a trace or a FormatError ----

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=20,
)
request = st.fixed_dictionaries(
    {},
    optional={
        "t": json_values | st.floats(0, 1e6),
        "type": st.sampled_from(["n", "s", "subagent"]) | json_values,
        "in": st.integers(-5, 10**6) | json_values,
        "out": st.integers(-5, 10**6),
        "hash_ids": st.lists(st.integers(-(2**64), 2**64)) | json_values,
        "requests": st.lists(json_values, max_size=2)
        | st.lists(
            st.fixed_dictionaries(
                {
                    "t": st.integers(0, 5),
                    "in": st.integers(0, 9),
                    "out": st.integers(0, 9),
                    "hash_ids": st.lists(st.integers(0, 9)),
                }
            ),
            max_size=2,
        ),
        "think_time": json_values,
        "input_types": json_values | st.lists(st.text(max_size=3)),
        "agent_id": json_values,
    },
)
documents = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "block_size": st.integers(-1, 100) | json_values,
            "requests": st.lists(request, max_size=4) | json_values,
        },
        optional={"id": json_values, "hash_id_scope": json_values, "models": json_values},
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_fuzz_parse_raises_only_format_errors(doc: Any) -> None:
    try:
        trace = parse_weka(doc, "fuzz.json")
    except FormatError as exc:
        assert str(exc).startswith("fuzz.json: ")
        return
    for ex in trace.exchanges:
        assert ex.hash_ids is not None and ex.usage.prompt_tokens is not None


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_bytes_raise_only_format_errors(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("w") / "f.json"
    path.write_bytes(data)
    with contextlib.suppress(FormatError):
        read_weka_file(path)


def test_absolute_subagent_times_are_kept_and_an_early_subagent_has_no_spawner(
    tmp_path: Path,
) -> None:
    req = {"type": "n", "in": 64, "out": 1, "hash_ids": [1], "api_time": 1.0}
    doc = {
        "id": "abs",
        "block_size": 64,
        "requests": [
            {"t": 0.5, "type": "subagent", "agent_id": "early", "requests": [{**req, "t": 0.0}]},
            {**req, "t": 1.0},
            {
                "t": 10.0,
                "type": "subagent",
                "agent_id": "a",
                "requests": [{**req, "t": 10.5}, {**req, "t": 12.0}],
            },  # absolute: >= the entry's t
            {
                "t": 20.0,
                "type": "subagent",
                "agent_id": "r",
                "requests": [{**req, "t": 0.0}, {**req, "t": 2.0}],
            },  # relative: from 0
        ],
    }
    path = tmp_path / "abs.json"
    path.write_bytes(orjson.dumps(doc))
    by_thread: dict[str, list[Exchange]] = {}
    for ex in read_weka_file(path).exchanges:
        by_thread.setdefault(ex.thread_id.split("/")[1], []).append(ex)
    starts = {k: [ex.timing.start_wall_ns / 1e9 for ex in v] for k, v in by_thread.items()}
    assert starts == {"early": [0.5], "main": [1.0], "a": [10.5, 12.0], "r": [20.0, 22.0]}
    assert by_thread["early"][0].parent_request_id is None
    assert by_thread["a"][0].parent_request_id == "abs/main/0"
