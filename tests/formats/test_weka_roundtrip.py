"""Weka -> agentx trace -> Weka gives every imported field back, JSON-equal: the file's header
(models in their order, tool/system tokens, totals, unknown keys), every subagent entry
(duration_ms, total_tokens, models, ...), every record (floats that nanoseconds would round,
absent and null keys, unknown keys), in the file's order, even when it is not the time order."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentx.core.examples import example_path
from agentx.formats.export import write_weka
from agentx.formats.weka import iter_weka, parse_weka
from agentx.store import read_trace, write_trace

DATA = example_path("weka")
SECONDS = st.one_of(
    st.integers(0, 10**6).map(lambda ms: ms / 1000),  # what real files hold
    st.floats(0, 1e6, allow_nan=False),  # any float: nanoseconds may not give it back
    st.integers(0, 10**4),  # an integer number of seconds
)
NAMES = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=6)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
OPTIONAL = (
    "type",
    "model",
    "input_types",
    "output_types",
    "stop",
    "api_time",
    "ttft",
    "think_time",
)


@st.composite
def records(draw: st.DrawFn, scope: str, n: int) -> list[dict[str, Any]]:
    out = []
    ids: list[int] = []
    for _ in range(n):
        keep = draw(st.integers(0, len(ids)))
        low, high = (0, 2**32 - 1) if scope == "local" else (-(2**63), 2**63 - 1)
        ids = ids[:keep] + draw(st.lists(st.integers(low, high), max_size=5))
        rec: dict[str, Any] = {
            "t": draw(SECONDS),
            "type": draw(st.sampled_from(["n", "s"])),
            "model": draw(st.sampled_from(["claude-opus", "claude-haiku"])),
            "in": draw(st.integers(0, 10**6)),
            "out": draw(st.integers(0, 5000)),
            "hash_ids": ids,
            "input_types": draw(st.lists(st.sampled_from(["text", "tool_result"]), max_size=2)),
            "output_types": draw(st.lists(st.sampled_from(["text", "tool_use"]), max_size=2)),
            "stop": draw(st.sampled_from(["", "tool_use", "end_turn"])),
            "api_time": draw(SECONDS),
            "ttft": draw(SECONDS),
            "think_time": draw(SECONDS),
        }
        for key in draw(st.lists(st.sampled_from(OPTIONAL), unique=True, max_size=3)):
            if draw(st.booleans()):
                del rec[key]
            else:
                rec[key] = None
        if draw(st.integers(0, 5)) == 0:
            rec[draw(st.sampled_from(["cache_read", "x"]))] = draw(JSONISH)
        out.append(rec)
    return out


@st.composite
def weka_documents(draw: st.DrawFn) -> dict[str, Any]:
    scope = draw(st.sampled_from(["local", "global"]))
    items: list[dict[str, Any]] = draw(records(scope, draw(st.integers(0, 5))))
    for _ in range(draw(st.integers(0, 3))):
        entry: dict[str, Any] = {"t": draw(SECONDS), "type": "subagent"}
        if draw(st.integers(0, 5)):
            entry["agent_id"] = draw(st.sampled_from(["agent_001", "agent_002", "main"]))
        entry |= {
            "subagent_type": "Explore",
            "duration_ms": draw(st.integers(0, 10**7)),
            "total_tokens": draw(st.integers(0, 10**7)),
            "tool_use_count": draw(st.integers(0, 99)),
            "status": draw(st.sampled_from(["completed", "failed"])),
            "requests": draw(records(scope, draw(st.integers(0, 4)))),
            "models": draw(st.permutations(["claude-haiku", "claude-opus"])),
            "tool_tokens": draw(st.integers(0, 10**5)),
            "system_tokens": draw(st.integers(0, 10**5)),
        }
        items.insert(draw(st.integers(0, len(items))), entry)
    if draw(st.booleans()):  # what real files do: records and entries in time order
        items.sort(key=lambda r: r["t"])
    doc: dict[str, Any] = {
        "id": draw(st.sampled_from(["fuzz", "trace_0001", 42])),
        "models": draw(st.permutations(["claude-opus", "claude-haiku", "claude-sonnet"])),
        "block_size": draw(st.sampled_from([64, 16])),
        "hash_id_scope": scope,
        "tool_tokens": draw(st.integers(0, 10**5)),
        "system_tokens": draw(st.integers(0, 10**5)),
        "requests": items,
        "totals": draw(JSONISH),
    }
    if draw(st.integers(0, 4)) == 0:
        doc["generator"] = draw(JSONISH)
    return doc


def _has_requests(doc: dict[str, Any]) -> bool:
    return any(r.get("type") != "subagent" or r["requests"] for r in doc["requests"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weka_documents())
def test_any_weka_document_round_trips_through_a_trace(doc: dict[str, Any]) -> None:
    assume(_has_requests(doc))  # a file without any request has no rows to carry it
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "t.parquet"
        write_trace(trace, parse_weka(orjson.loads(orjson.dumps(doc)), "fuzz.json").exchanges)
        assert write_weka(read_trace(trace), Path(d) / "back.json") == 1
        assert orjson.loads((Path(d) / "back.json").read_bytes()) == doc


@pytest.mark.parametrize("name", ["trace_0001.json", "trace_0010_head.json"])
def test_fixture_files_round_trip_from_a_directory_import(tmp_path: Path, name: str) -> None:
    """In a directory the k-th file's ids are offset by k * 2**32: the export takes it off."""
    trace = tmp_path / "t.parquet"
    write_trace(trace, iter_weka(DATA))
    write_weka(read_trace(trace), tmp_path / "back")
    assert orjson.loads((tmp_path / "back" / name).read_bytes()) == orjson.loads(
        (DATA / name).read_bytes()
    )
