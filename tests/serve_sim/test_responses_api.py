"""POST /v1/responses over real sockets (aiohttp): the OpenAI Responses shapes, streamed and
not, usage with cached tokens from the engine's admission, tool calls, errors."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from agentx.apis import Api
from agentx.prefixcache.cache import hittable_blocks
from agentx.prefixcache.tokens import count_request_tokens, count_tokens
from agentx.serve_sim import SimServer

from .helpers import sse_events

TEXT_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
SHELL = {
    "type": "function",
    "name": "shell",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "array", "items": {"type": "string"}}},
        "required": ["command"],
    },
}


@pytest.fixture
async def http(sim: SimServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(sim.url) as session:
        yield session


def conversation() -> dict[str, Any]:
    tag = uuid.uuid4().hex
    return {
        "model": "gpt-5-codex",
        "instructions": f"agent {tag}: " + "follow the repository's rules. " * 60,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"task {tag}: make the tests pass"}],
            }
        ],
        "store": False,
    }


async def post(
    http: aiohttp.ClientSession, body: dict[str, Any]
) -> tuple[aiohttp.ClientResponse, bytes]:
    async with http.post("/v1/responses", json=body) as resp:
        return resp, await resp.read()


def streamed(raw: bytes) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """(event names, their data, comments) of a Responses stream, checking each event's
    ``type`` is its name."""
    names, data, comments = [], [], []
    for name, payload in sse_events(raw):
        if name == "comment":
            comments.append(payload)
            continue
        obj = orjson.loads(payload)
        assert obj["type"] == name
        names.append(name)
        data.append(obj)
    return names, data, comments


async def test_non_streaming_response_and_cached_tokens_on_a_repeated_prefix(
    http: aiohttp.ClientSession,
) -> None:
    body = {**conversation(), "max_output_tokens": 12}
    resp, raw = await post(http, body)
    assert resp.status == 200 and resp.content_type == "application/json"
    assert float(resp.headers["x-agentx-server-ttft-ms"]) > 0
    data = orjson.loads(raw)
    assert data["object"] == "response" and data["id"].startswith("resp_")
    assert data["status"] == "completed" and data["model"] == "gpt-5-codex"
    assert data["instructions"] == body["instructions"]  # the request's settings, echoed
    (item,) = data["output"]
    assert (item["type"], item["role"], item["status"]) == ("message", "assistant", "completed")
    (part,) = item["content"]
    assert part["type"] == "output_text" and count_tokens(part["text"]) == 12
    usage = data["usage"]
    prompt = count_request_tokens(Api.OPENAI_RESPONSES, body)  # instructions + input
    assert usage["input_tokens"] == prompt and usage["output_tokens"] == 12
    assert usage["total_tokens"] == prompt + 12
    assert usage["input_tokens_details"] == {"cached_tokens": 0}
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}

    # the next turn re-sends the conversation and appends to it: its prefix is cached
    answer = {"type": "message", "role": "assistant", "content": [{**part}]}
    turn = {**body, "input": [*body["input"], answer, {"role": "user", "content": "go on"}]}
    data = orjson.loads((await post(http, turn))[1])
    cached = data["usage"]["input_tokens_details"]["cached_tokens"]
    assert prompt - 16 < cached <= prompt and cached % 16 == 0
    assert data["usage"]["input_tokens"] == count_request_tokens(Api.OPENAI_RESPONSES, turn)


async def test_streaming_events_in_openai_order_with_usage(http: aiohttp.ClientSession) -> None:
    body = {**conversation(), "max_output_tokens": 9, "stream": True}
    resp, raw = await post(http, body)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    names, data, comments = streamed(raw)
    deltas = [d for d in data if d["type"] == "response.output_text.delta"]
    assert len(deltas) == 9
    assert names == [*TEXT_EVENTS[:4], *["response.output_text.delta"] * 9, *TEXT_EVENTS[5:]]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    created, done = data[0]["response"], data[-1]["response"]
    assert created["status"] == "in_progress" and created["usage"] is None
    assert created["output"] == [] and created["id"] == done["id"]
    text = "".join(d["delta"] for d in deltas)
    item_id = data[2]["item"]["id"]
    assert all(d["item_id"] == item_id and d["output_index"] == 0 for d in deltas)
    assert data[-4]["text"] == text and data[-3]["part"]["text"] == text  # *.done carry it all
    assert data[-2]["item"]["content"][0]["text"] == text
    assert done["status"] == "completed" and done["output"] == [data[-2]["item"]]
    usage = done["usage"]
    assert usage["output_tokens"] == 9 and count_tokens(text) == 9
    assert usage["input_tokens"] == count_request_tokens(Api.OPENAI_RESPONSES, body)
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    # the server's timing, in a comment just before response.completed
    assert len(comments) == 1 and comments[0].startswith("agentx-server-timing ")
    assert raw.rfind(b": agentx-server-timing") < raw.rfind(b"event: response.completed")

    again = streamed((await post(http, body))[1])[1][-1]["response"]["usage"]
    assert again["input_tokens_details"]["cached_tokens"] == (
        hittable_blocks(usage["input_tokens"], 16) * 16
    )


async def test_a_function_call_streams_its_arguments(http: aiohttp.ClientSession) -> None:
    body = {**conversation(), "tools": [SHELL], "stream": True}
    names, data, _ = streamed((await post(http, body))[1])
    assert names[:3] == TEXT_EVENTS[:3] and names[-2:] == TEXT_EVENTS[-2:]
    item = data[2]["item"]
    assert item["type"] == "function_call" and item["name"] == "shell"
    assert item["id"].startswith("fc_") and item["call_id"].startswith("call_")
    deltas = [d["delta"] for d in data if d["type"] == "response.function_call_arguments.delta"]
    (args_done,) = [d for d in data if d["type"] == "response.function_call_arguments.done"]
    arguments = "".join(deltas)
    assert args_done["arguments"] == arguments
    assert orjson.loads(arguments) == {"command": ["agentx"]}
    done = data[-1]["response"]
    assert done["output"][0]["arguments"] == arguments
    assert done["usage"]["output_tokens"] == len(deltas)
    assert "response.content_part.added" not in names

    # its output goes back in the next turn: now the answer is text
    call = {k: item[k] for k in ("type", "call_id", "name")} | {"arguments": arguments}
    output = {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}
    turn = {**body, "input": [*body["input"], call, output], "stream": False}
    answer = orjson.loads((await post(http, turn))[1])
    assert answer["output"][0]["type"] == "message"
    assert answer["usage"]["input_tokens_details"]["cached_tokens"] > 0


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"model": "m"}, "input", "input"),
        ({"input": []}, "input", "non-empty"),
        ({"input": "x", "previous_response_id": "resp_1"}, "previous_response_id", "stores no"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens", "at least 1"),
        ({"input": "x " * 200, "max_output_tokens": 1_000_000}, "input", "maximum context"),
    ],
)
async def test_errors_in_openai_shape(
    http: aiohttp.ClientSession, body: dict[str, Any], param: str, words: str
) -> None:
    resp, raw = await post(http, body)
    assert resp.status == 400
    error = orjson.loads(raw)["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert words in error["message"]
