"""Mooncake and Weka export: block structure, timings, round trips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrub.factory import capture

from agentx.apis import MODEL_APIS
from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.core.models import Exchange
from agentx.formats import load_exchanges
from agentx.formats.blocks import IdMapper
from agentx.formats.convert import with_text
from agentx.formats.export import write_mooncake, write_weka
from agentx.formats.weka import parse_weka
from agentx.formats.weka.write import _finish_session, weka_request
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.tokens import request_tokens
from agentx.workload.stats import compute_stats

DATA = example_path("weka")
REQUEST_FIELDS = (
    "t",
    "type",
    "model",
    "in",
    "out",
    "hash_ids",
    "input_types",
    "output_types",
    "stop",
    "api_time",
    "ttft",
    "think_time",
)
SUBAGENT_FIELDS = ("t", "type", "agent_id", "subagent_type", "status")


def flatten(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for r in doc["requests"]:
        if r.get("type") == "subagent":
            rows.append(tuple(r.get(k) for k in SUBAGENT_FIELDS))
            rows.extend(("sub", *(x.get(k) for k in REQUEST_FIELDS)) for x in r["requests"])
        else:
            rows.append(tuple(r.get(k) for k in REQUEST_FIELDS))
    return rows


@pytest.mark.parametrize("name", ["trace_0001.json", "trace_0010_head.json"])
def test_weka_round_trip_keeps_in_out_blocks_and_timings(tmp_path: Path, name: str) -> None:
    src = DATA / name
    original = orjson.loads(src.read_bytes())
    exchanges = [with_text(e) for e in load_exchanges(src)]  # as `convert --to agentx` stores them
    out = tmp_path / "back.json"
    assert write_weka(exchanges, out) == 1
    back = orjson.loads(out.read_bytes())
    assert flatten(back) == flatten(original)
    assert back["totals"] == original["totals"]
    assert back["block_size"] == 64 and back["hash_id_scope"] == "local"


def test_mooncake_from_a_capture_has_chained_512_blocks(tmp_path: Path) -> None:
    exs = [e for e in capture() if e.api in MODEL_APIS]
    out = tmp_path / "m.jsonl"
    assert write_mooncake(exs, out) == len(exs)
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    stamps = [r["timestamp"] for r in lines]
    assert stamps[0] == 0 and stamps == sorted(stamps) and all(isinstance(s, int) for s in stamps)
    assert stamps[1] == round((exs[1].timing.start_wall_ns - exs[0].timing.start_wall_ns) / 1e6)
    tokens = [request_tokens(e.api, e.request) for e in exs]
    for r, toks in zip(lines, tokens, strict=True):
        assert r["input_length"] == toks.size
        assert len(r["hash_ids"]) == -(-toks.size // 512)
    # equal leading ids <=> equal leading 512-token blocks
    for i in range(len(lines)):
        for j in range(i):
            hi, hj = block_hashes(tokens[i], 512), block_hashes(tokens[j], 512)
            common = next(
                (k for k in range(min(hi.size, hj.size)) if hi[k] != hj[k]), min(hi.size, hj.size)
            )
            ids_common = next(
                (
                    k
                    for k, (a, b) in enumerate(
                        zip(lines[i]["hash_ids"], lines[j]["hash_ids"], strict=False)
                    )
                    if a != b
                ),
                min(len(lines[i]["hash_ids"]), len(lines[j]["hash_ids"])),
            )
            assert min(ids_common, min(hi.size, hj.size)) == common


def test_mooncake_from_weka_keeps_the_hit_rate_at_512(tmp_path: Path) -> None:
    src = DATA / "trace_0001.json"
    out = tmp_path / "m.jsonl"
    write_mooncake(load_exchanges(src), out)
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    fixture = orjson.loads(src.read_bytes())["requests"]
    assert [r["input_length"] for r in lines] == [r["in"] for r in fixture]
    assert [r["output_length"] for r in lines] == [r["out"] for r in fixture]
    assert [r["timestamp"] for r in lines] == [round(r["t"] * 1000) for r in fixture]
    assert all(len(r["hash_ids"]) == -(-r["input_length"] // 512) for r in lines)
    weka = compute_stats(src, block_size=512).to_json()
    moon = compute_stats(out).to_json()
    assert moon["block_size"] == weka["block_size"] == 512
    assert moon["theoretical_hit_rate"] == pytest.approx(weka["theoretical_hit_rate"], abs=1e-12)


def test_weka_from_a_capture(tmp_path: Path) -> None:
    exs = capture()
    assert write_weka(exs, tmp_path / "w") == 4
    doc = orjson.loads((tmp_path / "w" / "a.json").read_bytes())
    session = [e for e in exs if e.session_id == "a"]
    assert [r["in"] for r in doc["requests"]] == [
        request_tokens(e.api, e.request).size for e in session
    ]
    assert all(len(r["hash_ids"]) == r["in"] // 64 for r in doc["requests"])
    assert doc["requests"][0]["t"] == 0.0
    assert doc["requests"][1]["t"] == pytest.approx(
        (session[1].timing.start_wall_ns - session[0].timing.start_wall_ns) / 1e9
    )
    assert doc["requests"][1]["input_types"] == ["tool_result"]
    assert doc["requests"][0]["output_types"] == ["text", "tool_use"]
    ids = [r["hash_ids"] for r in doc["requests"]]
    assert ids[1][: len(ids[0])] == ids[0]  # a growing conversation shares its blocks
    assert doc["totals"]["parent_tokens"]["input"] == sum(r["in"] for r in doc["requests"])
    with pytest.raises(UsageError):
        write_weka(exs, tmp_path / "one.json")


def test_threads_become_subagents(tmp_path: Path) -> None:
    from dataclasses import replace

    exs = capture()
    main = [e for e in exs if e.session_id == "a"]
    sub = [
        replace(
            e,
            session_id="a",
            thread_id="a/agent_1",
            request_id="s" + e.request_id,
            flags=("subagent",),
            timing=replace(e.timing, start_wall_ns=e.timing.start_wall_ns + 7_000_000_000),
        )
        for e in exs
        if e.session_id == "o"
    ]
    write_weka(main + sub, tmp_path / "a.json")
    doc = orjson.loads((tmp_path / "a.json").read_bytes())
    entries = [r for r in doc["requests"] if r["type"] == "subagent"]
    assert len(entries) == 1 and entries[0]["agent_id"] == "agent_1"
    assert entries[0]["requests"][0]["t"] == 0.0
    assert entries[0]["t"] == pytest.approx(
        (sub[0].timing.start_wall_ns - main[0].timing.start_wall_ns) / 1e9
    )
    assert doc["totals"]["subagent_count"] == 1


# -- fuzz: random Weka documents survive import -> export ---------------------------------

_t = st.integers(0, 10**6).map(lambda ms: ms / 1000)


@st.composite
def weka_requests(draw: st.DrawFn, subagents: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    t = 0.0
    for i in range(draw(st.integers(1, 6))):
        if subagents and draw(st.integers(0, 4)) == 0:
            rows.append(
                {
                    "t": t,
                    "type": "subagent",
                    "agent_id": f"agent_{i}",
                    "subagent_type": "Explore",
                    "status": "completed",
                    "requests": draw(weka_requests(False)),
                }
            )
            continue
        n = draw(st.integers(0, 64 * 6))
        row: dict[str, Any] = {
            "t": t if rows else 0.0,
            "type": draw(st.sampled_from(["n", "s"])),
            "model": draw(st.sampled_from(["claude-opus", "claude-haiku"])),
            "in": n,
            "out": draw(st.integers(0, 5000)),
            "hash_ids": draw(st.lists(st.integers(0, 40), min_size=n // 64, max_size=n // 64)),
            "input_types": draw(
                st.lists(st.sampled_from(["text", "tool_result"]), max_size=2, unique=True)
            ),
            "output_types": draw(
                st.lists(st.sampled_from(["text", "tool_use", "thinking"]), max_size=2, unique=True)
            ),
            "stop": draw(st.sampled_from(["", "tool_use", "end_turn"])),
        }
        if draw(st.booleans()):
            row["api_time"] = draw(_t)
        if draw(st.booleans()):
            row["ttft"] = draw(_t)
        row["think_time"] = draw(_t)
        rows.append(row)
        t = round(t + draw(_t) + 0.001, 3)
    if rows and rows[0].get("type") == "subagent":
        rows[0]["t"] = 0.0
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weka_requests(True))
def test_weka_import_export_round_trip(requests: list[dict[str, Any]]) -> None:
    if not any(r["type"] != "subagent" for r in requests):
        return  # a file needs a main thread
    doc = {"id": "fuzz", "block_size": 64, "hash_id_scope": "local", "requests": requests}
    exchanges: list[Exchange] = list(parse_weka(doc, "fuzz.json").exchanges)

    def export(rows: list[Exchange]) -> dict[str, Any]:
        mapper = IdMapper(1)
        return _finish_session("fuzz", [weka_request(e, mapper)[0] for e in rows], mapper)

    assert flatten(export(exchanges)) == flatten(doc)
    text = [with_text(e) for e in exchanges]
    assert flatten(export(text)) == flatten(doc)
    for e in text:
        assert isinstance(e.request, dict)
        assert np.asarray(e.hash_ids).size == (e.usage.prompt_tokens or 0) // 64
