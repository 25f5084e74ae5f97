"""Anonymized traces: no original text, same token counts, same prefix structure."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from store.strategies import exchange_sequences

from agentx.apis import MODEL_APIS
from agentx.core.models import Exchange
from agentx.prefixcache.theory import HitRateMeter
from agentx.prefixcache.tokens import (
    count_request_tokens,
    count_tokens,
    render_segments,
)
from agentx.scrub.anonymize import AnonymizeOptions, Anonymizer, anonymize_trace
from agentx.scrub.leaves import collect
from agentx.store import read_trace, write_trace

from .factory import capture

KEY = b"test-key"


def hit_rate(exchanges: list[Exchange], bs: int) -> float | None:
    """The theoretical hit rate as every stage counts it (`agentx stats`, `scrub --hit-rate`)."""
    meter = HitRateMeter(bs)
    for e in exchanges:
        meter.observe(e)
    return meter.hit_rate


@pytest.fixture(scope="module")
def pair() -> tuple[list[Exchange], list[Exchange], Anonymizer]:
    original = capture()
    a = Anonymizer(AnonymizeOptions(key=KEY))
    return original, [a.exchange(e) for e in original], a


def test_token_counts_are_kept_segment_by_segment(
    pair: tuple[list[Exchange], list[Exchange], Anonymizer],
) -> None:
    original, anon, a = pair
    assert a.counts["inexact_segments"] == 0
    for o, x in zip(original, anon, strict=True):
        so, sx = render_segments(o.api, o.request), render_segments(x.api, x.request)
        assert [count_tokens(s) for s in sx] == [count_tokens(s) for s in so]


@pytest.mark.parametrize("bs", [1, 16, 64])
def test_theoretical_hit_rate_is_kept_exactly(
    pair: tuple[list[Exchange], list[Exchange], Anonymizer], bs: int
) -> None:
    original, anon, _ = pair
    # sessions a and b share a system prompt up to its date line: partial sharing inside a segment
    kept = hit_rate(original, bs)
    assert kept is not None and 0 < kept < 1
    assert hit_rate(anon, bs) == kept


def test_no_original_text_survives(pair: tuple[list[Exchange], list[Exchange], Anonymizer]) -> None:
    original, anon, _ = pair
    out = b"\n".join(
        orjson.dumps([x.request, x.response.text, list(x.response.tool_calls)]) for x in anon
    ).decode()
    texts = {leaf.text for e in original for leaf in collect(e.request) if len(leaf.text) >= 12}
    texts |= {e.response.text for e in original if e.response.text and len(e.response.text) >= 12}
    assert texts
    leaked = [t for t in texts if t in out]
    assert not leaked
    for phrase in ("interactive CLI tool", "Working directory", "def f1(x)", "src/mod", "ls -la"):
        assert phrase not in out


def test_structure_is_kept(pair: tuple[list[Exchange], list[Exchange], Anonymizer]) -> None:
    original, anon, _ = pair
    for o, x in zip(original, anon, strict=True):
        assert o.request.keys() == x.request.keys()
        assert o.request["model"] == x.request["model"]
        key = "input" if "input" in o.request else "messages"
        for mo, mx in zip(o.request[key], x.request[key], strict=True):
            assert mo.keys() == mx.keys()
            assert mo.get("role") == mx.get("role") and mo.get("type") == mx.get("type")
            for call_o, call_x in zip(
                mo.get("tool_calls") or [], mx.get("tool_calls") or [], strict=True
            ):
                assert call_o["id"] == call_x["id"]
                assert call_o["function"]["name"] == call_x["function"]["name"]
                args = orjson.loads(call_x["function"]["arguments"])  # still valid JSON
                assert args.keys() == orjson.loads(call_o["function"]["arguments"]).keys()
            if isinstance(mo.get("content"), list):
                for bo, bx in zip(mo["content"], mx["content"], strict=True):
                    assert bo.get("type") == bx.get("type")
                    assert bo.get("id") == bx.get("id") and bo.get("tool_use_id") == bx.get(
                        "tool_use_id"
                    )
                    assert bo.get("cache_control") == bx.get("cache_control")
        tools_o, tools_x = o.request.get("tools") or [], x.request.get("tools") or []
        assert [t.get("name") for t in tools_o] == [t.get("name") for t in tools_x]


def test_identical_content_gives_identical_synthetic_content(
    pair: tuple[list[Exchange], list[Exchange], Anonymizer],
) -> None:
    original, anon, _ = pair
    seen: dict[bytes, bytes] = {}
    for o, x in zip(original, anon, strict=True):
        for mo, mx in zip(
            o.request.get("messages", []), x.request.get("messages", []), strict=True
        ):
            k, v = orjson.dumps(mo), orjson.dumps(mx)
            assert seen.setdefault(k, v) == v


def test_deterministic_for_a_key_and_different_across_keys() -> None:
    ex = capture()[3]
    one = Anonymizer(AnonymizeOptions(key=KEY)).exchange(ex)
    assert Anonymizer(AnonymizeOptions(key=KEY)).exchange(ex) == one
    assert Anonymizer(AnonymizeOptions(key=b"other")).exchange(ex).request != one.request


def test_keep_tools() -> None:
    ex = capture()[0]
    x = Anonymizer(AnonymizeOptions(key=KEY, keep_tools=True)).exchange(ex)
    assert x.request["tools"] == ex.request["tools"]
    assert x.request["system"] != ex.request["system"]


def test_anonymize_trace_files(tmp_path: Path) -> None:
    src, dst = tmp_path / "t.parquet", tmp_path / "anon.parquet"
    original = capture()
    write_trace(src, original)
    report = anonymize_trace(src, dst, AnonymizeOptions(key=KEY))
    anon = read_trace(dst)
    assert report.exchanges == len(original) == len(anon)
    assert report.inexact_segments == 0
    assert [count_request_tokens(e.api, e.request) for e in anon] == [
        count_request_tokens(e.api, e.request) for e in original
    ]
    assert hit_rate(anon, 16) == hit_rate(original, 16)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchange_sequences(max_requests=8))
def test_token_counts_kept_on_arbitrary_bodies(exchanges: list[Exchange]) -> None:
    a = Anonymizer(AnonymizeOptions(key=KEY))
    anon = [a.exchange(e) for e in exchanges]
    if a.counts["inexact_segments"]:
        return  # reported, not hidden: checked for zero on realistic captures above
    for o, x in zip(exchanges, anon, strict=True):
        if o.api in MODEL_APIS and isinstance(o.request, dict):
            assert count_request_tokens(x.api, x.request) == count_request_tokens(o.api, o.request)
