"""The Weka corpus generator (scripts/weka_corpus): valid Weka that agentx reads, deterministic,
and a 50-trace corpus with the fixtures' and the reference corpus's statistics (docs/corpus.md;
agentx's own counts)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from weka_corpus import (
    BLOCK_SIZE,
    DEFAULT_SEED,
    MANIFEST,
    build_trace,
    ensure_corpus,
    generate_corpus,
    trace_name,
)

from agentx.core.examples import example_path
from agentx.formats import detect_format, load_exchanges
from agentx.formats.weka import read_weka_file, weka_files
from agentx.workload.stats import compute_stats

FIXTURES = example_path("weka")


@pytest.fixture(scope="module")
def corpus50(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("weka50")
    return out, generate_corpus(out, 50, DEFAULT_SEED)


@pytest.fixture(scope="module")
def stats50(corpus50: tuple[Path, Any]) -> dict[str, Any]:
    return compute_stats(corpus50[0]).to_json()


def _docs(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(f.read_bytes()) for f in sorted(path.glob("*.json"))]


def _threads(doc: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The main thread (every top-level record), then each subagent's."""
    main = [r for r in doc["requests"] if r["type"] != "subagent"]
    subs = [r["requests"] for r in doc["requests"] if r["type"] == "subagent"]
    return [main, *subs]


def _agents(path: Path) -> list[list[dict[str, Any]]]:
    """The top-level records by agent, as agentx splits the flat ones (the main agent, each
    flat chain), in turn order; then each subagent's."""
    doc = orjson.loads(path.read_bytes())
    by_key = {(r["t"], r["in"]): r for r in doc["requests"] if r["type"] != "subagent"}
    chains: dict[str, dict[int, dict[str, Any]]] = {}
    for ex in read_weka_file(path).exchanges:
        if "subagent" in ex.flags:
            continue
        thread, _, n = ex.request_id.rpartition("/")
        key = (round(ex.timing.start_wall_ns / 1e9, 6), ex.usage.prompt_tokens)
        chains.setdefault(thread, {})[int(n)] = by_key[key]
    flat = [[turns[k] for k in range(len(turns))] for turns in chains.values()]
    return [*flat, *_threads(doc)[1:]]


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_documents_have_the_fixtures_layout_and_consistent_totals(
    corpus50: tuple[Path, Any],
) -> None:
    fixture = orjson.loads((FIXTURES / "trace_0001.json").read_bytes())
    docs = _docs(corpus50[0])
    assert [d["id"] for d in docs] == [trace_name(i, 50) for i in range(50)]
    kinds = set()
    for doc in docs:
        assert list(doc) == list(fixture)
        assert (doc["block_size"], doc["hash_id_scope"]) == (BLOCK_SIZE, "local")
        parent = [r for r in doc["requests"] if r["type"] != "subagent"]
        children = [r for e in doc["requests"] if e["type"] == "subagent" for r in e["requests"]]
        totals = doc["totals"]
        assert totals["parent_tokens"] == {
            "input": sum(r["in"] for r in parent),
            "output": sum(r["out"] for r in parent),
        }
        assert totals["subagent_tokens"] == {
            "input": sum(r["in"] for r in children),
            "output": sum(r["out"] for r in children),
        }
        assert totals["combined_tokens"]["input"] == sum(r["in"] for r in parent + children)
        assert totals["subagent_count"] == len(_threads(doc)) - 1
        for r in parent + children:
            kinds.add(r["type"])
            assert len(r["hash_ids"]) == r["in"] // BLOCK_SIZE
            assert r["out"] > 0 and r["think_time"] >= 0
            assert ("api_time" in r) == (r["stop"] != "")
            keys = [k for k in fixture["requests"][0] if k in r]
            assert list(r) == keys[:-1] + (["ttft"] if "ttft" in r else []) + ["think_time"]
    assert kinds == {"n", "s"}


def test_agentx_imports_it_and_counts_the_generators_hit_rate(
    corpus50: tuple[Path, Any], stats50: dict[str, Any]
) -> None:
    out, summary = corpus50
    assert detect_format(out) == "weka"
    assert MANIFEST not in {f.name for f in weka_files(out)}
    assert (stats50["sessions"], stats50["requests"]) == (50, summary.requests)
    flat = stats50["flat_chains"]["chains"]  # the generator's, and any the recording made
    assert flat >= summary.flat_chains > 0
    assert stats50["threads"] == 50 + summary.subagents + flat
    assert stats50["totals"]["input_tokens"] == summary.input_tokens
    assert stats50["theoretical_hit_rate"] == pytest.approx(summary.hit_rate, abs=1e-12)
    with_subagents = next(f for f in sorted(out.glob("*.json")) if b'"subagent"' in f.read_bytes())
    exs = list(load_exchanges(with_subagents))
    assert any("subagent" in ex.flags for ex in exs)


def test_a_50_trace_corpus_has_the_intended_statistics(stats50: dict[str, Any]) -> None:
    """Ranges hold for 30 seeds at 50 traces (p5-p95 well inside them); targets: the reference
    corpus (69.5 requests per session, p50 ~104K, p90 ~234K, hit rate 96.3 %)."""
    per_trace = stats50["requests"] / 50
    p = stats50["input_tokens"]
    assert 45 <= per_trace <= 130
    assert 75_000 <= p["p50"] <= 135_000
    assert 130_000 <= p["p90"] <= 400_000
    assert p["max"] <= 1_000_000
    assert 0.94 <= stats50["theoretical_hit_rate"] <= 0.98
    assert 150 <= stats50["output_tokens"]["p50"] <= 450
    assert 5 <= stats50["think_time_s"]["p50"] <= 40


def test_prompts_grow_turn_by_turn_sharing_the_previous_prefix(
    corpus50: tuple[Path, Any],
) -> None:
    shared_fraction = []
    resets = 0
    for path in sorted(corpus50[0].glob("*.json")):
        doc = orjson.loads(path.read_bytes())
        for thread in _agents(path):
            head = thread[0]["hash_ids"]
            for a, b in pairwise(thread):
                assert b["t"] >= a["t"]
                common = _common_prefix(a["hash_ids"], b["hash_ids"])
                if common >= len(a["hash_ids"]) - 3:  # a turn: the old prompt, its answer, more
                    assert b["in"] >= a["in"] + a["out"]
                    shared_fraction.append(common / len(b["hash_ids"]))
                else:  # compaction: restart from the tools + system prefix
                    resets += 1
                    prefix = (doc["tool_tokens"] + doc["system_tokens"]) // BLOCK_SIZE
                    assert common >= prefix and b["hash_ids"][:prefix] == head[:prefix]
    assert np.median(shared_fraction) > 0.98  # fixtures: 0.99
    assert 10 <= resets <= 200


def test_subagents_share_their_type_prefix_and_the_parent_waits(
    corpus50: tuple[Path, Any],
) -> None:
    entries = 0
    for doc in _docs(corpus50[0]):
        first_of_type: dict[str, list[int]] = {}
        items = doc["requests"]
        for k, e in enumerate(items):
            if e["type"] != "subagent":
                continue
            entries += 1
            reqs = e["requests"]
            start = e["t"] - e["duration_ms"] / 1000
            last_end = reqs[-1]["t"] + reqs[-1]["api_time"]
            assert 2.4 <= e["duration_ms"] / 1000 - last_end <= 3.6
            assert reqs[-1]["stop"] == "end_turn" and reqs[0]["input_types"] == ["text"]
            resumed = next(r for r in items[k:] if r["type"] != "subagent")
            assert resumed["t"] >= e["t"] and resumed["input_types"] == ["tool_result"]
            spawner = next(r for r in reversed(items[:k]) if r["type"] != "subagent")
            assert start >= spawner["t"] + spawner["api_time"]
            prefix = (e["tool_tokens"] + e["system_tokens"]) // BLOCK_SIZE
            seen = first_of_type.setdefault(e["subagent_type"], reqs[0]["hash_ids"][:prefix])
            assert reqs[0]["hash_ids"][:prefix] == seen
        ts = [e["t"] for e in items]
        assert ts == sorted(ts)
    assert entries >= 5


def test_deterministic_per_seed_and_a_bigger_corpus_extends_a_smaller_one(
    tmp_path: Path,
) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_corpus(a, 3, seed=7)
    generate_corpus(b, 5, seed=7)
    generate_corpus(c, 3, seed=8)
    for name in ("trace_0001.json", "trace_0002.json", "trace_0003.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
        assert (a / name).read_bytes() != (c / name).read_bytes()
    doc, _ = build_trace(1, 3, seed=7)
    assert orjson.loads((a / "trace_0002.json").read_bytes()) == orjson.loads(
        orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)
    )


def test_scale_shrinks_tokens_not_structure(tmp_path: Path) -> None:
    full = generate_corpus(tmp_path / "full", 4, seed=3)
    small = generate_corpus(tmp_path / "small", 4, seed=3, scale=0.1)
    assert small.requests == full.requests
    assert 0.08 <= small.input_tokens / full.input_tokens <= 0.12
    trace = read_weka_file(tmp_path / "small" / "trace_0001.json")
    assert all(ex.hash_block_size == BLOCK_SIZE for ex in trace.exchanges)


def test_ensure_corpus_reuses_an_identical_corpus_only(tmp_path: Path) -> None:
    out = tmp_path / "c"
    assert ensure_corpus(out, 2, seed=1, scale=0.05)
    assert not ensure_corpus(out, 2, seed=1, scale=0.05)
    (out / "trace_0002.json").unlink()
    assert ensure_corpus(out, 2, seed=1, scale=0.05)
    assert ensure_corpus(out, 2, seed=2, scale=0.05)
    with pytest.raises(ValueError):
        generate_corpus(out, 0)
