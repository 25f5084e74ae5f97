"""serve-sim over real sockets with httpx: both APIs, streaming and not, usage, metrics, errors."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.tokens import count_tokens, get_encoding
from agentx.serve_sim import SimConfig, SimServer

from .helpers import QUICK, metric, parse_metrics, sse_events


def unique_system(words: int = 200) -> str:
    tag = uuid.uuid4().hex
    return f"session {tag}: " + " ".join(f"rule{i}-{tag[i % 32]}" for i in range(words))


def stream_raw(client: httpx.Client, path: str, body: dict[str, Any]) -> bytes:
    with client.stream("POST", path, json=body) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        return resp.read()


@pytest.fixture
def client(sim: SimServer) -> httpx.Client:
    with httpx.Client(base_url=sim.url, timeout=30) as c:
        yield c  # type: ignore[misc]


def test_chat_non_streaming(client: httpx.Client) -> None:
    body = {
        "model": "whatever",
        "messages": [{"role": "user", "content": unique_system(20)}],
        "max_tokens": 40,
        "ignore_eos": True,
    }
    resp = client.post("/v1/chat/completions", json=body)
    assert resp.status_code == 200
    data = resp.json()
    assert data["object"] == "chat.completion" and data["model"] == "whatever"
    choice = data["choices"][0]
    assert choice["finish_reason"] == "length"
    assert count_tokens(choice["message"]["content"]) == 40
    usage = data["usage"]
    assert usage["completion_tokens"] == 40
    assert usage["total_tokens"] == usage["prompt_tokens"] + 40
    assert usage["prompt_tokens_details"]["cached_tokens"] == 0
    assert float(resp.headers["x-agentx-server-ttft-ms"]) > 0
    assert float(resp.headers["x-agentx-server-e2e-ms"]) >= float(
        resp.headers["x-agentx-server-ttft-ms"]
    )


def test_cached_tokens_rise_on_a_growing_conversation(client: httpx.Client) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": unique_system()},
        {"role": "user", "content": "first question"},
    ]
    seen: list[tuple[int, int]] = []
    for turn in range(3):
        body = {"messages": messages, "max_tokens": 8}
        usage = client.post("/v1/chat/completions", json=body).json()["usage"]
        seen.append((usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]))
        messages = [
            *messages,
            {"role": "assistant", "content": f"answer {turn}"},
            {"role": "user", "content": f"question {turn + 2}"},
        ]
    (n1, c1), (n2, c2), (n3, c3) = seen
    assert c1 == 0
    assert n1 < n2 < n3
    assert c2 == (n1 // 16) * 16  # every full block of turn 1 is reused, nothing more
    assert c3 == (n2 // 16) * 16
    again = client.post("/v1/chat/completions", json=body).json()["usage"]  # turn 3 repeated
    assert again["prompt_tokens"] == n3
    assert again["prompt_tokens_details"]["cached_tokens"] == hittable_blocks(n3, 16) * 16


def test_a_growing_long_message_counts_exactly_as_encoding_it_whole(
    client: httpx.Client,
) -> None:
    """A replay of a hash-only corpus re-sends one growing user message: serve-sim encodes it
    piece by piece from its memo, and the count must be the one of encoding the prompt whole."""
    tag = uuid.uuid4().hex
    lines = [f"{tag} line {i}: it's x{i} + {i * 7}\n" for i in range(3000)]
    enc = get_encoding()
    previous = -1
    for turn in (1000, 2000, 3000):
        text = "".join(lines[:turn])
        body = {"messages": [{"role": "user", "content": text}], "max_tokens": 2}
        resp = client.post("/v1/chat/completions", json=body)
        assert resp.status_code == 200, resp.text
        usage = resp.json()["usage"]
        whole = enc.encode_ordinary(f"<|user|>\n{text}\n")
        assert usage["prompt_tokens"] == len(whole) > previous
        previous = usage["prompt_tokens"]


def test_chat_streaming_with_usage(client: httpx.Client) -> None:
    body = {
        "messages": [{"role": "user", "content": unique_system(30)}],
        "max_tokens": 25,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events = sse_events(stream_raw(client, "/v1/chat/completions", body))
    assert events[-1] == (None, "[DONE]")
    comments = [d for n, d in events if n == "comment"]
    assert len(comments) == 1 and comments[0].startswith("agentx-server-timing ")
    timing = orjson.loads(comments[0].split(" ", 1)[1])
    assert 0 < timing["ttft_ms"] <= timing["e2e_ms"]
    chunks = [orjson.loads(d) for n, d in events if n is None and d != "[DONE]"]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    content_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(content_chunks) == 25 and count_tokens(text) == 25
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 25
    assert len({c["id"] for c in chunks}) == 1


def test_chat_streaming_without_usage_sends_none(client: httpx.Client) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": True}
    chunks = [
        orjson.loads(d)
        for n, d in sse_events(stream_raw(client, "/v1/chat/completions", body))
        if n is None and d != "[DONE]"
    ]
    assert all("usage" not in c for c in chunks)


def test_answer_lengths(client: httpx.Client) -> None:
    base = {"messages": [{"role": "user", "content": "x"}]}
    asked = client.post("/v1/chat/completions", json={**base, "max_tokens": 700}).json()
    assert asked["usage"]["completion_tokens"] == 700
    assert asked["choices"][0]["finish_reason"] == "length"
    unbounded = client.post("/v1/chat/completions", json=base).json()
    assert unbounded["usage"]["completion_tokens"] == 256  # --default-max-tokens
    assert unbounded["choices"][0]["finish_reason"] == "stop"
    longer = client.post("/v1/chat/completions", json={**base, "min_tokens": 300}).json()
    assert longer["usage"]["completion_tokens"] == 300


def test_eos_tokens_models_a_natural_answer_length() -> None:
    with SimServer(SimConfig.of(port=0, eos_tokens=50, **QUICK)) as srv:
        body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 400}
        natural = httpx.post(srv.url + "/v1/chat/completions", json=body).json()
        assert natural["usage"]["completion_tokens"] == 50
        assert natural["choices"][0]["finish_reason"] == "stop"
        forced = httpx.post(srv.url + "/v1/chat/completions", json={**body, "ignore_eos": True})
        assert forced.json()["usage"]["completion_tokens"] == 400
        anth = {"messages": body["messages"], "max_tokens": 400, "min_tokens": 80}
        assert (
            httpx.post(srv.url + "/v1/messages", json=anth).json()["usage"]["output_tokens"] == 80
        )


def test_messages_streaming_event_sequence_and_cache_reads(client: httpx.Client) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 12,
        "system": [
            {"type": "text", "text": unique_system(), "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": "hello"}],
        "stream": True,
    }
    first = sse_events(stream_raw(client, "/v1/messages", body))
    names = [n for n, _ in first if n != "comment"]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert names.count("content_block_delta") == 12
    assert any(n == "comment" for n, _ in first)
    start = orjson.loads(first[0][1])["message"]
    assert start["usage"]["cache_read_input_tokens"] == 0
    delta = orjson.loads(next(d for n, d in first if n == "message_delta"))
    assert delta["delta"]["stop_reason"] == "max_tokens" and delta["usage"]["output_tokens"] == 12

    second = sse_events(stream_raw(client, "/v1/messages", body))
    usage = orjson.loads(second[0][1])["message"]["usage"]
    assert usage["cache_read_input_tokens"] > 0
    total = usage["input_tokens"] + usage["cache_read_input_tokens"]
    assert total == start["usage"]["input_tokens"]


def test_messages_non_streaming(client: httpx.Client) -> None:
    body = {"max_tokens": 5, "messages": [{"role": "user", "content": unique_system(10)}]}
    resp = client.post("/v1/messages", json=body)
    data = resp.json()
    assert data["type"] == "message" and data["role"] == "assistant"
    assert data["content"][0]["type"] == "text"
    assert data["stop_reason"] == "max_tokens"
    assert data["usage"]["output_tokens"] == 5
    assert "x-agentx-server-ttft-ms" in resp.headers


def test_count_tokens(client: httpx.Client) -> None:
    body = {"messages": [{"role": "user", "content": "hello world"}]}
    n = client.post("/v1/messages/count_tokens", json=body).json()["input_tokens"]
    msg = client.post("/v1/messages", json={**body, "max_tokens": 1}).json()
    assert n == msg["usage"]["input_tokens"] + msg["usage"]["cache_read_input_tokens"]


def test_openai_tool_call_streamed(client: httpx.Client) -> None:
    body = {
        "messages": [{"role": "user", "content": "list files"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "ls",
                    "parameters": {
                        "type": "object",
                        "properties": {"dir": {"type": "string"}, "all": {"type": "boolean"}},
                        "required": ["dir"],
                    },
                },
            }
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = [
        orjson.loads(d)
        for n, d in sse_events(stream_raw(client, "/v1/chat/completions", body))
        if n is None and d != "[DONE]"
    ]
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert calls[0]["function"]["name"] == "ls" and calls[0]["id"].startswith("call_")
    args = "".join(c["function"]["arguments"] for c in calls)
    assert orjson.loads(args) == {"dir": "agentx"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["completion_tokens"] == count_tokens(args)


def test_anthropic_tool_use_then_text_after_the_result(client: httpx.Client) -> None:
    tools = [
        {
            "name": "Read",
            "input_schema": {"type": "object", "properties": {"p": {"type": "string"}}},
        }
    ]
    first = client.post(
        "/v1/messages",
        json={
            "max_tokens": 50,
            "tools": tools,
            "messages": [{"role": "user", "content": "read it"}],
        },
    ).json()
    assert first["stop_reason"] == "tool_use"
    use = first["content"][0]
    assert use["type"] == "tool_use" and use["name"] == "Read" and use["input"] == {"p": "agentx"}
    messages = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": first["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "data"}],
        },
    ]
    second = client.post(
        "/v1/messages", json={"max_tokens": 50, "tools": tools, "messages": messages}
    ).json()
    assert second["content"][0]["type"] == "text"


def test_models_and_health(client: httpx.Client, sim: SimServer) -> None:
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert models["data"][0]["id"] == sim.config.model
    assert models["data"][0]["max_model_len"] == sim.config.max_model_len
    assert client.get("/health").status_code == 200


def test_metrics_account_for_a_request(client: httpx.Client) -> None:
    before = parse_metrics(client.get("/metrics").text)
    messages = [{"role": "system", "content": unique_system()}, {"role": "user", "content": "q"}]
    client.post(
        "/v1/chat/completions", json={"messages": messages, "max_tokens": 4, "ignore_eos": True}
    )
    usage = client.post(
        "/v1/chat/completions", json={"messages": messages, "max_tokens": 4, "ignore_eos": True}
    ).json()["usage"]
    after = parse_metrics(client.get("/metrics").text)

    def delta(name: str, **labels: str) -> float:
        return metric(after, name, **labels) - metric(before, name, **labels)

    prompt, cached = usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert delta("vllm:prefix_cache_queries_total") == 2 * prompt
    assert delta("vllm:prefix_cache_hits_total") == cached
    assert delta("vllm:prompt_tokens_total") == 2 * prompt
    assert delta("vllm:prompt_tokens_by_source_total", source="local_cache_hit") == cached
    assert (
        delta("vllm:prompt_tokens_by_source_total", source="local_compute") == 2 * prompt - cached
    )
    assert delta("vllm:prompt_tokens_by_source_total", source="external_kv_transfer") == 0
    assert delta("vllm:generation_tokens_total") == 8
    assert delta("vllm:request_success_total", finished_reason="length") == 2
    assert delta("vllm:time_to_first_token_seconds_count") == 2
    assert metric(after, "vllm:num_requests_running", model_name="agentx-sim", engine="0") == 0
    assert metric(after, "vllm:num_requests_waiting") == 0
    assert 0 <= metric(after, "vllm:kv_cache_usage_perc") <= 1


DATA = Path(__file__).resolve().parents[1] / "metrics" / "data"


def test_metrics_page_is_prometheus_text(client: httpx.Client) -> None:
    resp = client.get("/metrics")
    assert resp.headers["content-type"].startswith("text/plain")
    lines = resp.text.splitlines()
    types = {line.split()[2]: line.split()[3] for line in lines if line.startswith("# TYPE")}
    assert types["vllm:prefix_cache_queries_total"] == "counter"
    assert types["vllm:kv_cache_usage_perc"] == "gauge"
    assert types["vllm:time_to_first_token_seconds"] == "histogram"
    # every family typed exactly as vLLM 0.32 types it (prometheus_client: counters carry
    # `_total` in HELP/TYPE and on their samples, then a `_created` gauge), so a parser that
    # goes by the TYPE lines (agentx-harness's) finds serve-sim's counters
    real = (DATA / "vllm-0.32.0-after.txt").read_text().splitlines()
    vllm_types = {line.split()[2]: line.split()[3] for line in real if line.startswith("# TYPE")}
    for family, kind in types.items():
        assert vllm_types.get(family, kind) == kind, family
        if kind == "counter":
            assert family.endswith("_total")
            assert types[family.removesuffix("_total") + "_created"] == "gauge"
    samples_of = {line.split("{")[0] for line in lines if line and not line.startswith("#")}
    assert {f for f, k in types.items() if k == "counter"} <= samples_of
    shared = {f for f in types if f in vllm_types}
    assert len(shared) >= 20  # most of what serve-sim exposes is named as vLLM names it
    samples = parse_metrics(resp.text)
    info = metric(samples, "vllm:cache_config_info", block_size="16", num_gpu_blocks="10240")
    assert info == 1.0  # where replay reads the block size, as from vLLM


# -- errors ---------------------------------------------------------------------------------------


def assert_openai_error(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    return err  # type: ignore[no-any-return]


def test_errors_have_the_api_shape_and_the_server_survives(
    client: httpx.Client, sim: SimServer
) -> None:
    post = client.post
    assert_openai_error(
        post(
            "/v1/chat/completions",
            content=b'{"messages": [',
            headers={"content-type": "application/json"},
        ),
        400,
    )
    assert_openai_error(
        post("/v1/chat/completions", content=b"", headers={"content-type": "application/json"}), 400
    )
    assert_openai_error(post("/v1/chat/completions", json=[1, 2]), 400)
    err = assert_openai_error(post("/v1/chat/completions", json={"model": "m"}), 400)
    assert err["param"] == "messages"
    assert_openai_error(post("/v1/chat/completions", json={"messages": [{"role": "wizard"}]}), 400)
    assert_openai_error(
        post(
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
        ),
        400,
    )
    assert_openai_error(
        post(
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}], "stream": "yes"},
        ),
        400,
    )
    too_long = {
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": sim.config.max_model_len,
    }
    err = assert_openai_error(post("/v1/chat/completions", json=too_long), 400)
    assert err["code"] == "context_length_exceeded"
    assert_openai_error(client.get("/v1/chat/completions"), 405)
    assert_openai_error(client.get("/v1/nothing"), 404)

    anth = post("/v1/messages", json={"messages": [{"role": "user", "content": "x"}]})
    assert anth.status_code == 400
    assert (
        anth.json()["type"] == "error" and anth.json()["error"]["type"] == "invalid_request_error"
    )
    assert "max_tokens" in anth.json()["error"]["message"]
    assert post("/v1/messages", content=b"nope").json()["type"] == "error"

    assert client.get("/health").status_code == 200
    ok = post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 2},
    )
    assert ok.status_code == 200


def test_oversize_prompt_against_a_small_context() -> None:
    with SimServer(SimConfig.of(port=0, max_model_len=64, **QUICK)) as srv:
        big = {"messages": [{"role": "user", "content": "word " * 200}]}
        resp = httpx.post(srv.url + "/v1/chat/completions", json=big)
        assert resp.status_code == 400
        assert "maximum context length is 64 tokens" in resp.json()["error"]["message"]
        anth = httpx.post(srv.url + "/v1/messages", json={**big, "max_tokens": 5})
        assert anth.status_code == 400 and "prompt is too long" in anth.json()["error"]["message"]
        assert httpx.get(srv.url + "/health").status_code == 200


# -- timing, disconnects, queueing, long prompts --------------------------------------------------


def test_client_timing_error_is_measurable(client: httpx.Client) -> None:
    """The server's TTFT (SSE comment) lower-bounds the client's; the gap is the client's error."""
    body = {
        "messages": [{"role": "user", "content": unique_system(50)}],
        "max_tokens": 5,
        "stream": True,
    }
    t0 = time.perf_counter()
    client_ttft: float | None = None
    lines: list[str] = []
    with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        for line in resp.iter_lines():
            if client_ttft is None and '"content":"' in line and '"content":""' not in line:
                client_ttft = time.perf_counter() - t0
            lines.append(line)
    assert client_ttft is not None
    comment = next(line for line in lines if line.startswith(": agentx-server-timing"))
    server_ttft = orjson.loads(comment.split(" ", 2)[2])["ttft_ms"] / 1000
    error = client_ttft - server_ttft
    assert 0 < error < 0.5, (client_ttft, server_ttft)


def test_a_client_that_goes_away_is_aborted_and_frees_its_slot(client: httpx.Client) -> None:
    before = parse_metrics(client.get("/metrics").text)
    body = {
        "messages": [{"role": "user", "content": "long"}],
        "max_tokens": 100_000,
        "ignore_eos": True,
        "stream": True,
    }
    with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        for i, _ in enumerate(resp.iter_lines()):
            if i > 5:
                break
    deadline = time.monotonic() + 10
    while True:
        after = parse_metrics(client.get("/metrics").text)
        aborted = metric(after, "vllm:request_success_total", finished_reason="abort") - metric(
            before, "vllm:request_success_total", finished_reason="abort"
        )
        if aborted == 1 and metric(after, "vllm:num_requests_running") == 0:
            break
        assert time.monotonic() < deadline, "the aborted stream still holds its slot"
        time.sleep(0.02)
    assert client.get("/health").status_code == 200


def test_max_batch_queues_requests() -> None:
    """With one batch slot, a request sent while another runs waits for it: the second one's
    server queue time is most of the first one's 2 s of decoding, the first one's is ~0."""
    config = SimConfig.of(port=0, max_batch=1, decode_tps=20.0, prefill_tps=1e6, overhead_ms=1.0)
    with SimServer(config) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        import concurrent.futures

        body = {
            "messages": [{"role": "user", "content": "q"}],
            "max_tokens": 40,  # 2 s at 20 tokens/s
            "ignore_eos": True,
        }
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = pool.submit(c.post, "/v1/chat/completions", json=body)
            deadline = time.monotonic() + 30
            while not re.search(
                r"^vllm:num_requests_running\{.*\} 1\.0$", c.get("/metrics").text, re.M
            ):
                assert time.monotonic() < deadline and not first.done(), "the first never ran"
                time.sleep(0.02)
            second = pool.submit(c.post, "/v1/chat/completions", json=body)
            responses = [first.result(), second.result()]
        queues = [float(r.headers["x-agentx-server-queue-ms"]) for r in responses]
        assert queues[0] < 500  # admitted at once (generous: a loaded machine)
        assert queues[1] > 1000  # waited for most of the first one's 2 s


def test_a_long_prompt_is_tokenized_off_the_loop_and_cached(client: httpx.Client) -> None:
    text = unique_system(12_000)  # ~70K tokens
    body = {"messages": [{"role": "user", "content": text}], "max_tokens": 2}
    first = client.post("/v1/chat/completions", json=body).json()["usage"]
    assert first["prompt_tokens"] > 50_000
    second = client.post("/v1/chat/completions", json=body).json()["usage"]
    assert second["prompt_tokens_details"]["cached_tokens"] == (
        hittable_blocks(first["prompt_tokens"], 16) * 16
    )
