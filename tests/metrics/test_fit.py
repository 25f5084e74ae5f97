"""The server's KV cache against the prompts sent: too small for one prompt, or for the lanes."""

from __future__ import annotations

from agentx.metrics.fit import kv_fit_warning
from metrics.factory import rec


def test_a_cache_smaller_than_the_largest_prompt() -> None:
    rows = [rec(expected_prompt_tokens=n) for n in (1_000, 5_000, 240_000)]
    w = kv_fit_warning(163_840, rows, 4, 0.9, 0.9, "serve-sim")
    assert w is not None and "163,840 tokens, less than the largest prompt sent (240,000)" in w
    assert "--profile agentx" in w


def test_a_cache_smaller_than_the_lanes_working_set_only_when_the_rate_shows_it() -> None:
    rows = [rec(expected_prompt_tokens=100_000) for _ in range(10)]
    w = kv_fit_warning(1_000_000, rows, 64, 0.0004, 0.911, "vllm")
    assert w is not None and "64 lanes' working set (~6,400,000 tokens" in w
    assert "0.0% from cache where an unbounded one would have served 91.1%" in w
    assert "--gpu-memory-utilization" in w
    assert kv_fit_warning(1_000_000, rows, 64, 0.85, 0.911, "vllm") is None  # it held enough
    assert kv_fit_warning(10_000_000, rows, 64, 0.0004, 0.911, "vllm") is None
    assert kv_fit_warning(None, rows, 64, 0.0004, 0.911, "vllm") is None  # capacity unknown
