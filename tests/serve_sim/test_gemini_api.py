"""POST /v1beta/models/{model}:generateContent and :streamGenerateContent over real sockets
(aiohttp): Google's shapes (SSE with ?alt=sse, a streamed JSON array without), usageMetadata
with cached tokens from the engine's admission, function calls, errors."""

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

MODEL = "gemini-2.5-pro"
GENERATE = f"/v1beta/models/{MODEL}:generateContent"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent"
TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "read_file",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {"path": {"type": "STRING"}},
                    "required": ["path"],
                },
            }
        ]
    }
]


@pytest.fixture
async def http(sim: SimServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(sim.url) as session:
        yield session


def request(max_tokens: int | None = None) -> dict[str, Any]:
    tag = uuid.uuid4().hex
    body: dict[str, Any] = {
        "systemInstruction": {"parts": [{"text": f"agent {tag}: " + "be careful. " * 80}]},
        "contents": [{"role": "user", "parts": [{"text": f"task {tag}: explain main.py"}]}],
    }
    if max_tokens is not None:
        body["generationConfig"] = {"maxOutputTokens": max_tokens, "temperature": 0}
    return body


async def post(
    http: aiohttp.ClientSession, path: str, body: dict[str, Any]
) -> tuple[aiohttp.ClientResponse, bytes]:
    async with http.post(path, json=body) as resp:
        return resp, await resp.read()


def text_of(chunk: dict[str, Any]) -> str:
    (candidate,) = chunk["candidates"]
    assert candidate["index"] == 0 and candidate["content"]["role"] == "model"
    return "".join(p.get("text", "") for p in candidate["content"]["parts"])


def check_chunks(chunks: list[dict[str, Any]], body: dict[str, Any], n: int) -> dict[str, Any]:
    """One chunk per token then the last with the finish and all the counts; its usage."""
    prompt = count_request_tokens(Api.GEMINI, body)  # systemInstruction + contents
    assert len(chunks) == n + 1
    assert count_tokens("".join(text_of(c) for c in chunks)) == n
    ids = {c["responseId"] for c in chunks}
    assert len(ids) == 1 and all(c["modelVersion"] == MODEL for c in chunks)
    for c in chunks[:-1]:
        assert "finishReason" not in c["candidates"][0]
        assert c["usageMetadata"] == {"promptTokenCount": prompt, "totalTokenCount": prompt}
    assert chunks[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    usage: dict[str, Any] = chunks[-1]["usageMetadata"]
    assert usage["promptTokenCount"] == prompt and usage["candidatesTokenCount"] == n
    assert usage["totalTokenCount"] == prompt + n
    return usage


async def test_generate_content_and_cached_tokens_on_a_repeated_prefix(
    http: aiohttp.ClientSession,
) -> None:
    body = request(max_tokens=10)
    resp, raw = await post(http, GENERATE, body)
    assert resp.status == 200 and resp.content_type == "application/json"
    assert float(resp.headers["x-agentx-server-ttft-ms"]) > 0
    data = orjson.loads(raw)
    assert data["modelVersion"] == MODEL and data["responseId"]
    assert data["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert count_tokens(text_of(data)) == 10
    prompt = count_request_tokens(Api.GEMINI, body)
    assert data["usageMetadata"] == {
        "promptTokenCount": prompt,
        "candidatesTokenCount": 10,
        "totalTokenCount": prompt + 10,
        "cachedContentTokenCount": 0,
    }
    # the system instruction is part of the prompt, as the other families' system prompts are
    bare = {"contents": body["contents"], "generationConfig": body["generationConfig"]}
    assert prompt > count_request_tokens(Api.GEMINI, bare) + 80

    # the next turn appends the answer and a question: the whole first prompt is a prefix
    answer = data["candidates"][0]["content"]
    turn = {
        **body,
        "contents": [*body["contents"], answer, {"role": "user", "parts": [{"text": "and then?"}]}],
    }
    usage = orjson.loads((await post(http, GENERATE, turn))[1])["usageMetadata"]
    assert usage["promptTokenCount"] == count_request_tokens(Api.GEMINI, turn)
    assert prompt - 16 < usage["cachedContentTokenCount"] <= prompt


async def test_stream_with_alt_sse(http: aiohttp.ClientSession) -> None:
    body = request(max_tokens=7)
    resp, raw = await post(http, STREAM + "?alt=sse", body)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    events = sse_events(raw)
    comments = [data for name, data in events if name == "comment"]
    assert len(comments) == 1 and comments[0].startswith("agentx-server-timing ")
    assert raw.rfind(b": agentx-server-timing") < raw.rfind(b"data: ")  # before the last chunk
    assert raw.count(b"\r\n\r\n") == 8  # Google ends each event with CRLF CRLF
    chunks = [orjson.loads(data) for name, data in events if name is None]
    usage = check_chunks(chunks, body, 7)
    assert usage["cachedContentTokenCount"] == 0

    again = [
        orjson.loads(d)
        for n, d in sse_events((await post(http, STREAM + "?alt=sse", body))[1])
        if n is None
    ]
    cached = again[-1]["usageMetadata"]["cachedContentTokenCount"]
    assert cached == hittable_blocks(usage["promptTokenCount"], 16) * 16


async def test_stream_without_alt_is_a_json_array_sent_piece_by_piece(
    http: aiohttp.ClientSession,
) -> None:
    body = request(max_tokens=5)
    resp, raw = await post(http, STREAM, body)
    assert resp.status == 200 and resp.content_type == "application/json"
    assert resp.headers.get("Transfer-Encoding") == "chunked"  # streamed, not one sized body
    assert raw.startswith(b"[{") and raw.endswith(b"}]") and raw.count(b",\r\n{") == 5
    check_chunks(orjson.loads(raw), body, 5)


async def test_a_function_call_then_its_response(http: aiohttp.ClientSession) -> None:
    body = {**request(), "tools": TOOLS}
    raw = (await post(http, STREAM + "?alt=sse", body))[1]
    chunks = [orjson.loads(data) for name, data in sse_events(raw) if name is None]
    (part,) = chunks[0]["candidates"][0]["content"]["parts"]
    call = part["functionCall"]
    assert call == {"name": "read_file", "args": {"path": "agentx"}}  # from the OBJECT schema
    assert len(chunks) == 2 and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == count_tokens(
        orjson.dumps(call["args"]).decode()
    )
    whole = orjson.loads((await post(http, GENERATE, body))[1])
    assert whole["candidates"][0]["content"]["parts"] == [part]

    response = {"functionResponse": {"name": "read_file", "response": {"content": "x = 1"}}}
    turn = {
        **body,
        "contents": [
            *body["contents"],
            {"role": "model", "parts": [part]},
            {"role": "user", "parts": [response]},
        ],
    }
    answer = orjson.loads((await post(http, GENERATE, turn))[1])
    assert "text" in answer["candidates"][0]["content"]["parts"][0]  # a text answer now
    assert answer["usageMetadata"]["cachedContentTokenCount"] > 0


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        (GENERATE, {}, 400, "contents is not specified"),
        (GENERATE, {"contents": [{"role": "user"}]}, 400, "parts"),
        (GENERATE, {**request(), "generationConfig": {"maxOutputTokens": 0}}, 400, "at least 1"),
        (GENERATE, {**request(), "generationConfig": {"maxOutputTokens": 10**6}}, 400, "exceeds"),
        (f"/v1beta/models/{MODEL}:countTokens", request(), 404, "no such endpoint"),
    ],
)
async def test_errors_in_google_shape(
    http: aiohttp.ClientSession, path: str, body: dict[str, Any], status: int, words: str
) -> None:
    resp, raw = await post(http, path, body)
    assert resp.status == status
    error = orjson.loads(raw)["error"]
    assert error["code"] == status and words in error["message"]
    assert error["status"] == ("NOT_FOUND" if status == 404 else "INVALID_ARGUMENT")
