"""`agentx stats`: counts, distributions, token sources and the theoretical hit rate."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentx.apis import Api
from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.core.flags import FLAG_NON_MODEL as NON_MODEL_FLAG
from agentx.core.flags import FLAG_USAGE_ESTIMATED
from agentx.core.models import Exchange, Response, Timing, Usage
from agentx.core.percentiles import percentiles
from agentx.formats import load_exchanges
from agentx.prefixcache.cache import theoretical_hit_rate
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.theory import hash_only_blocks
from agentx.prefixcache.tokens import request_tokens
from agentx.store import write_trace
from agentx.workload.stats import compute_stats, summarize

WEKA = example_path("weka")
CONTRACT_KEYS = {
    "schema",
    "sessions",
    "threads",
    "requests",
    "apis",
    "input_tokens",
    "output_tokens",
    "think_time_s",
    "theoretical_hit_rate",
    "block_size",
}
P_KEYS = {"p50", "p90", "p99", "mean", "max"}


@pytest.mark.parametrize("name", ["trace_0001.json", "trace_0010_head.json"])
def test_weka_totals_match_the_files_own_totals(name: str) -> None:
    doc = json.loads((WEKA / name).read_text())
    result = compute_stats(WEKA / name).to_json()
    combined = doc["totals"]["combined_tokens"]
    assert result["totals"]["input_tokens"] == combined["input"]
    assert result["totals"]["output_tokens"] == combined["output"]
    assert result["threads"] == 1 + doc["totals"]["subagent_count"]
    assert result["sessions"] == 1 and result["format"] == "weka"
    assert result["block_size"] == doc["block_size"] and result["tokens_source"] == "usage"


@pytest.mark.parametrize("name", ["trace_0001.json", "trace_0010_head.json"])
def test_weka_hit_rate_comes_from_the_hash_ids(name: str) -> None:
    doc = json.loads((WEKA / name).read_text())
    result = compute_stats(WEKA / name).to_json()  # the file's own block size
    assert result["block_size"] == 64
    with pytest.raises(UsageError, match="multiple of 64"):  # never silently another one
        compute_stats(WEKA / name, block_size=16)
    # the unbounded cache over the file's own blocks, in the order the reader yields them
    exchanges = list(load_exchanges(WEKA / name))
    assert sum(len(ex.hash_ids or ()) for ex in exchanges) == sum(
        len(q["hash_ids"])
        for r in doc["requests"]
        for q in (r["requests"] if r["type"] == "subagent" else [r])
    )  # every id of the file, none made up
    ref = [hash_only_blocks(ex, None)[:2] for ex in exchanges]
    expected = theoretical_hit_rate(ref, doc["block_size"])
    assert 0 < expected < 1
    assert result["theoretical_hit_rate"] == pytest.approx(expected, abs=1e-12)


def _session(
    n: int, *, usage: bool, api: str = Api.ANTHROPIC_MESSAGES, session: str = "s"
) -> list[Exchange]:
    system = "You are a careful coding agent. " * 40
    conv: list[Any] = []
    out = []
    for i in range(n):
        conv = [*conv, {"role": "user", "content": f"turn {i}: please look at file_{i}.py " * 5}]
        body = {"model": "m", "system": system, "messages": json.loads(json.dumps(conv))}
        out.append(
            Exchange(
                request_id=f"{session}-{i}",
                session_id=session,
                thread_id="main",
                api=api,
                request=body,
                timing=Timing(start_wall_ns=i),
                parent_request_id=f"{session}-{i - 1}" if i else None,
                usage=Usage(prompt_tokens=1000 + i, completion_tokens=10 * i) if usage else Usage(),
                response=Response(text=f"answer number {i}"),
                think_time_s=float(i),
            )
        )
        conv = [*conv, {"role": "assistant", "content": f"answer number {i}"}]
    return out


def test_text_hit_rate_equals_the_reference_computation(tmp_path: Path) -> None:
    exs = _session(12, usage=True) + _session(5, usage=True, session="t")
    path = tmp_path / "t.parquet"
    write_trace(path, exs)
    for bs in (1, 16, 64):
        result = compute_stats(path, block_size=bs).to_json()
        ref = [
            (
                block_hashes(request_tokens(ex.api, ex.request), bs),
                request_tokens(ex.api, ex.request).size,
            )
            for ex in exs
        ]
        assert result["theoretical_hit_rate"] == pytest.approx(
            theoretical_hit_rate(ref, bs), abs=1e-12
        )
        assert result["block_size"] == bs
    assert (
        0.5 < compute_stats(path).to_json()["theoretical_hit_rate"] < 1.0
    )  # shared system prompt + history


def test_counts_and_distributions(tmp_path: Path) -> None:
    exs = _session(10, usage=True)
    result = summarize(exs).to_json()
    assert set(result) >= CONTRACT_KEYS
    assert result["schema"] == "agentx.stats/1"
    assert (result["sessions"], result["threads"], result["requests"]) == (1, 1, 10)
    assert result["apis"] == {Api.ANTHROPIC_MESSAGES: 10}
    for key in ("input_tokens", "output_tokens", "think_time_s"):
        assert set(result[key]) == P_KEYS
    assert result["input_tokens"]["max"] == 1009 and result["input_tokens"][
        "mean"
    ] == pytest.approx(1004.5)
    assert result["think_time_s"]["p50"] == pytest.approx(4.5)
    assert result["totals"]["input_tokens"] == sum(1000 + i for i in range(10))
    assert result["tokens_source"] == "usage"


def test_tiktoken_counts_when_the_server_reported_nothing() -> None:
    exs = _session(4, usage=False)
    result = summarize(exs).to_json()
    counts = [request_tokens(ex.api, ex.request).size for ex in exs]
    assert result["tokens_source"] == "tiktoken"
    assert result["totals"]["input_tokens"] == sum(counts)
    assert result["output_tokens"]["max"] > 0  # counted from the response text
    mixed = summarize(_session(2, usage=False) + _session(2, usage=True, session="u")).to_json()
    assert mixed["tokens_source"] == "mixed"


def test_rows_capture_estimated_are_counted_and_said_so() -> None:
    """aider streams without usage: capture counts the tokens itself and flags the rows; stats
    says whose counts they are instead of calling them the provider's."""
    exs = [replace(ex, flags=(FLAG_USAGE_ESTIMATED,)) for ex in _session(3, usage=True)]
    result = summarize(exs)
    assert result.tokens_source == "tiktoken" and result.usage_estimated_rows == 3
    assert result.totals.input_tokens == sum(1000 + i for i in range(3))  # the counts as stored
    mixed = summarize(exs[:1] + _session(2, usage=True, session="u"))
    assert mixed.tokens_source == "mixed" and mixed.usage_estimated_rows == 1
    reported = summarize(_session(2, usage=True))
    assert reported.tokens_source == "usage" and reported.usage_estimated_rows == 0
    assert list(reported.to_json()).index("usage_estimated_rows") == (
        list(reported.to_json()).index("tokens_source") + 1
    )


def test_only_model_calls_count() -> None:
    exs = _session(3, usage=True)
    noise = [
        replace(exs[0], request_id="x1", api=Api.OTHER),
        replace(exs[0], request_id="x2", session_id="other", flags=(NON_MODEL_FLAG,)),
    ]
    result = summarize(exs + noise).to_json()
    assert (result["requests"], result["sessions"], result["non_model_rows"]) == (3, 1, 2)


def test_unknown_stays_unknown() -> None:
    ex = replace(_session(1, usage=False)[0], response=Response(), think_time_s=None)
    result = summarize([ex]).to_json()
    assert result["output_tokens"]["p50"] is None and result["think_time_s"]["max"] is None
    assert result["totals"]["output_tokens"] is None and result["totals"]["cached_tokens"] is None
    empty = summarize([]).to_json()
    assert empty["requests"] == 0 and empty["theoretical_hit_rate"] is None


def test_percentiles() -> None:
    p = percentiles(list(range(1, 101))).to_json()
    assert (p["p50"], p["max"], p["mean"]) == (50.5, 100.0, 50.5)
    assert p["p99"] == pytest.approx(99.01)  # linear interpolation: 1 + 0.99 * (100 - 1)
    assert percentiles([]).to_json() == {
        "p50": None,
        "p90": None,
        "p99": None,
        "mean": None,
        "max": None,
    }
