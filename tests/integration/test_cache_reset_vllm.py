"""--reset-cache against the real vLLM: with ``VLLM_SERVER_DEV_MODE=1`` its
``POST /reset_prefix_cache`` empties the prefix cache (the same prompt is computed again);
without it the endpoint is absent and the run carries a warning that says how to enable it."""

from __future__ import annotations

import secrets

import httpx
import pytest

from agentx.replay.cache_reset import reset_prefix_cache


def _cached_tokens(url: str, model: str, system: str) -> int:
    body = {
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}],
        "max_tokens": 2,
    }
    resp = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120.0)
    resp.raise_for_status()
    return int(resp.json()["usage"]["prompt_tokens_details"]["cached_tokens"])


async def test_reset_prefix_cache(vllm_url: str, vllm_model: str) -> None:
    system = f"{secrets.token_hex(8)} " + " ".join(f"rule {i}: be precise." for i in range(120))
    assert _cached_tokens(vllm_url, vllm_model, system) == 0
    assert _cached_tokens(vllm_url, vllm_model, system) > 0  # the second time, a prefix hit
    async with httpx.AsyncClient() as client:
        result = await reset_prefix_cache(client, vllm_url, "vllm")
    if not result.ok:
        assert "HTTP 404" in result.message and "VLLM_SERVER_DEV_MODE=1" in result.message
        pytest.skip("this vLLM runs without VLLM_SERVER_DEV_MODE=1: no reset endpoint (warned)")
    assert result.endpoint == "/reset_prefix_cache"
    assert _cached_tokens(vllm_url, vllm_model, system) == 0  # computed again
