"""serve-sim --replicas N: each replica its own engine, cache and /metrics under /replicas/I;
the top-level paths a built-in router honouring every --session-header preset, over real
sockets."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from agentx.routing import Route, session_header
from agentx.serve_sim import SimConfig, SimServer

from .helpers import QUICK, metric, parse_metrics


def body(tree: str, turns: int = 1) -> dict[str, Any]:
    system = f"agent {tree}. " + " ".join(f"tool-{i} does thing {i}." for i in range(60))
    messages: list[dict[str, str]] = [{"role": "system", "content": system}]
    for t in range(turns):
        messages.append({"role": "user", "content": f"step {t}: " + "detail " * 20})
        messages.append({"role": "assistant", "content": f"done {t}"})
    messages.append({"role": "user", "content": "next"})
    return {"messages": messages, "max_tokens": 2}


def serve(replicas: int, router: Route = Route.SESSION) -> SimServer:
    return SimServer(SimConfig.of(port=0, replicas=replicas, router=router, **QUICK))


def queries(client: httpx.Client, base: str) -> float:
    page = client.get(f"{base}/metrics")
    assert page.status_code == 200
    return metric(parse_metrics(page.text), "vllm:prefix_cache_queries_total")


def test_each_replica_has_its_own_cache_and_metrics() -> None:
    with serve(2) as srv, httpx.Client() as client:
        b = body(uuid.uuid4().hex, 3)
        for _ in range(2):
            r = client.post(f"{srv.replica_url(0)}/v1/chat/completions", json=b)
            assert r.status_code == 200, r.text
        first = client.post(f"{srv.replica_url(1)}/v1/chat/completions", json=b).json()
        assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0  # a cold replica
        assert queries(client, srv.replica_url(0)) == 2 * first["usage"]["prompt_tokens"]
        assert queries(client, srv.replica_url(1)) == first["usage"]["prompt_tokens"]
        assert client.get(f"{srv.url}/metrics").status_code == 404  # a router has no engine
        assert client.get(f"{srv.url}/replicas/2/metrics").status_code == 404
        assert client.get(f"{srv.replica_url(1)}/v1/models").status_code == 200


@pytest.mark.parametrize("preset", ["vllm-router", "smg", "dynamo"])
def test_the_router_keeps_a_session_on_one_replica(preset: str) -> None:
    header = session_header(preset)
    assert header is not None
    with serve(3) as srv, httpx.Client(base_url=srv.url) as client:
        homes = set()
        for k in range(8):
            tree = f"tree-{k}-{uuid.uuid4().hex}"
            seen = set()
            for turn in range(3):
                thread = None if turn < 2 else "sub-1"  # a subagent follows its tree (dynamo)
                r = client.post(
                    "/v1/chat/completions",
                    json=body(tree, turn + 1),
                    headers=header.headers(tree, thread),
                )
                assert r.status_code == 200, r.text
                seen.add(r.headers["x-agentx-replica"])
            assert len(seen) == 1
            homes |= seen
        assert len(homes) > 1  # trees spread over the replicas


def test_llm_d_token_echoed_back_pins_the_replica() -> None:
    header = session_header("llm-d")
    assert header is not None
    with serve(2, Route.ROUND_ROBIN) as srv, httpx.Client(base_url=srv.url) as client:
        tree = uuid.uuid4().hex
        r = client.post("/v1/chat/completions", json=body(tree), headers=header.headers(tree))
        token = r.headers["x-session-token"]
        home = r.headers["x-agentx-replica"]
        for turn in range(4):  # round-robin would alternate; the token pins it
            r = client.post(
                "/v1/chat/completions",
                json=body(tree, turn + 2),
                headers=header.headers(tree, token=token),
            )
            assert r.headers["x-agentx-replica"] == home
        # without the token, round-robin moves on
        picks = {
            client.post("/v1/chat/completions", json=body(tree)).headers["x-agentx-replica"]
            for _ in range(2)
        }
        assert picks == {"0", "1"}


def test_round_robin_router_spreads_and_session_cache_hits_more() -> None:
    trees = [uuid.uuid4().hex for _ in range(3)]  # odd: round-robin moves each tree on

    def hit_rate(route: Route) -> float:
        prompt = cached = 0
        with serve(2, route) as srv, httpx.Client(base_url=srv.url) as client:
            for turn in range(4):
                for tree in trees:
                    r = client.post(
                        "/v1/chat/completions",
                        json=body(tree, turn + 1),
                        headers={"x-session-id": tree},
                    )
                    u = r.json()["usage"]
                    prompt += u["prompt_tokens"]
                    cached += u["prompt_tokens_details"]["cached_tokens"]
        return cached / prompt

    assert hit_rate(Route.SESSION) > hit_rate(Route.ROUND_ROBIN) + 0.1


def test_one_replica_serves_as_before() -> None:
    with serve(1) as srv, httpx.Client(base_url=srv.url) as client:
        assert client.get("/metrics").status_code == 200
        assert client.get("/replicas/0/metrics").status_code == 404
        r = client.post("/v1/chat/completions", json=body("t"))
        assert "x-agentx-replica" not in r.headers
        assert srv.replica_url(0) == srv.url
