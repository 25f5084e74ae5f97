"""The directions serve-sim's cache must show, over HTTP with requests sent directly (no replay
tool): a repeated request sequence hits more the second time; a small KV cache hits less; an
offload tier wins part of it back."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from agentx.apis.registry import classify
from agentx.apis.usage import usage_from
from agentx.serve_sim import SimConfig, SimServer

from .helpers import QUICK, metric, parse_metrics

SESSIONS = 6
TURNS = 4


def workload() -> list[tuple[str, dict[str, Any]]]:
    """Interleaved agent-like sessions: each has its own long system prompt and a conversation
    that grows by a turn each request. Alternates OpenAI and Anthropic sessions."""
    tag = uuid.uuid4().hex
    sessions = []
    for s in range(SESSIONS):
        system = f"agent {tag} session {s}. " + " ".join(
            f"tool{s}-{i} does thing {i}." for i in range(120)
        )
        sessions.append((system, []))
    requests: list[tuple[str, dict[str, Any]]] = []
    for turn in range(TURNS):
        for s, (system, history) in enumerate(sessions):
            history.append(
                {"role": "user", "content": f"step {turn} of session {s}: " + "detail " * 30}
            )
            if s % 2:
                body = {"system": system, "messages": list(history), "max_tokens": 4}
                requests.append(("/v1/messages", body))
            else:
                body = {
                    "messages": [{"role": "system", "content": system}, *history],
                    "max_tokens": 4,
                }
                requests.append(("/v1/chat/completions", body))
            history.append({"role": "assistant", "content": f"done with step {turn}"})
    return requests


def run(client: httpx.Client, requests: list[tuple[str, dict[str, Any]]]) -> float:
    """Hit rate the server reported in the responses' usage, read as agentx reads any usage."""
    prompt = cached = 0
    for path, body in requests:
        resp = client.post(path, json=body)
        assert resp.status_code == 200, resp.text
        usage = usage_from(classify("POST", path), resp.json()["usage"])
        assert usage.prompt_tokens is not None and usage.cached_tokens is not None
        prompt += usage.prompt_tokens
        cached += usage.cached_tokens
    return cached / prompt


def serve(**overrides: Any) -> SimServer:
    return SimServer(SimConfig.of(port=0, **{**QUICK, **overrides}))


def test_the_same_sequence_twice_hits_more_the_second_time() -> None:
    requests = workload()
    with serve() as srv, httpx.Client(base_url=srv.url) as client:
        first = run(client, requests)
        second = run(client, requests)
        samples = parse_metrics(client.get("/metrics").text)
    assert 0.3 < first < second <= 1.0
    queries = metric(samples, "vllm:prefix_cache_queries_total")
    hits = metric(samples, "vllm:prefix_cache_hits_total")
    assert hits / queries > first  # the server's own counters agree: both runs together


def test_a_small_cache_hits_less_and_offload_recovers_part() -> None:
    requests = workload()
    # one session's prompt is ~1-2K tokens; six interleaved sessions need ~10K to stay warm
    with serve() as srv, httpx.Client(base_url=srv.url) as client:
        roomy = run(client, requests)
    with serve(kv_tokens=2048) as srv, httpx.Client(base_url=srv.url) as client:
        small = run(client, requests)
    with (
        serve(kv_tokens=2048, offload_tokens=6144) as srv,
        httpx.Client(base_url=srv.url) as client,
    ):
        offloaded = run(client, requests)
        samples = parse_metrics(client.get("/metrics").text)
    assert small < offloaded < roomy
    assert metric(samples, "vllm:prompt_tokens_by_source_total", source="external_kv_transfer") > 0
    assert metric(samples, "vllm:external_prefix_cache_hits_total") > 0


def test_a_big_enough_offload_tier_recovers_everything() -> None:
    requests = workload()
    with serve() as srv, httpx.Client(base_url=srv.url) as client:
        roomy = run(client, requests)
    with (
        serve(kv_tokens=2048, offload_tokens=1_000_000) as srv,
        httpx.Client(base_url=srv.url) as client,
    ):
        offloaded = run(client, requests)
    assert offloaded == roomy
