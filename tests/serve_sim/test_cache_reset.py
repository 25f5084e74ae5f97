"""serve-sim's cache-reset endpoints: vLLM's POST /reset_prefix_cache and SGLang's /flush_cache."""

from __future__ import annotations

import uuid

import httpx

from agentx.serve_sim import SimConfig, SimServer

from .helpers import QUICK, metric, parse_metrics


def _ask(client: httpx.Client, system: str) -> int:
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "q"}]}
    usage = client.post("/v1/chat/completions", json={**body, "max_tokens": 4}).json()["usage"]
    return int(usage["prompt_tokens_details"]["cached_tokens"])


def test_reset_drops_the_cache_not_the_counters() -> None:
    system = " ".join(f"rule {i} {uuid.uuid4().hex}" for i in range(60))
    with SimServer(SimConfig.of(port=0, **QUICK)) as sim, httpx.Client(base_url=sim.url) as client:
        assert _ask(client, system) == 0
        assert _ask(client, system) > 0  # warm
        resp = client.post("/reset_prefix_cache", params={"reset_external": "true"})
        assert resp.status_code == 200 and resp.json() == {"success": True}
        assert _ask(client, system) == 0  # cold again
        assert client.post("/flush_cache").status_code == 200
        assert _ask(client, system) == 0
        samples = parse_metrics(client.get("/metrics").text)
        assert metric(samples, "vllm:prefix_cache_hits_total") > 0  # counters keep counting


def test_refused_while_requests_hold_blocks() -> None:
    from agentx.serve_sim.replica import Replica

    replica = Replica(SimConfig.of(port=0, **QUICK))
    replica.core.running = 1  # a request in flight
    assert replica.reset_prefix_cache() is False
    replica.core.running = 0
    assert replica.reset_prefix_cache() is True
