"""A small OpenAI-compatible streaming server that misbehaves on request, for replay tests.

A request whose body contains ``fault:NAME`` gets that fault; any other request gets a normal
stream of ``max_tokens`` one-token chunks with a usage block. Runs on its own thread and event
loop (``run_replay`` runs its own loop), on 127.0.0.1 and a free port.

Besides the transport faults (``reset``, ``stall``, ``die``, ...), the *hostile* modes of
:data:`HOSTILE` answer with valid JSON of the wrong shape, impossible usage or oversized events:
whatever a server sends, a replay must turn it into a typed row. ``/v1/messages`` and
``/v1/responses`` are served by the same handler (the OpenAI chat shapes, unless the mode is
written for that API).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

FAULT = re.compile(rb"fault:([a-z0-9_]+)")
MODEL = "fault-model"


def _chunk(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _token(i: int) -> bytes:
    return _chunk(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": f"t{i} "}}],
        }
    )


ROLE = _chunk({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
FINISH = _chunk({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})


def _raw_usage(usage: dict[str, Any]) -> bytes:
    return _chunk({"id": "c", "choices": [], "usage": usage})


def _delta(delta: Any) -> bytes:
    return _chunk({"id": "c", "choices": [{"index": 0, "delta": delta}]})


# Hostile modes: the events (bytes) a streamed answer carries between the role chunk and
# [DONE], or, for names starting with ``json_``, the whole non-streamed JSON body.
HOSTILE: dict[str, Any] = {
    "choices_str": [_chunk({"id": "c", "choices": "oops"})],
    "choices_int": [_chunk({"id": "c", "choices": [5]})],
    "choices_null_item": [_chunk({"id": "c", "choices": [None]})],
    "delta_str": [_delta("abc")],
    "delta_list": [_delta(["a"])],
    "content_int": [_delta({"content": 5})],
    "tool_calls_str": [_delta({"tool_calls": "x"})],
    "tool_index_str": [_delta({"tool_calls": [{"index": "a", "function": {"name": "f"}}]})],
    "tool_function_str": [_delta({"tool_calls": [{"index": 0, "function": "f"}]})],
    "finish_obj": [
        _chunk({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": {}}]})
    ],
    "data_null": [b"data: null\n\n"],
    "data_list": [b"data: [1,2]\n\n"],
    "binary": [b"data: \xff\xfe\x00garbage\n\n"],
    "usage_str": [_raw_usage({"prompt_tokens": "10", "completion_tokens": "x"})],
    "usage_list": [_raw_usage({"prompt_tokens": [1], "completion_tokens": {"n": 1}})],
    "usage_negative": [_raw_usage({"prompt_tokens": -30, "completion_tokens": 4})],
    "usage_absurd": [_raw_usage({"prompt_tokens": 10, "completion_tokens": 10**18})],
    "usage_huge_int": [b'data: {"choices":[],"usage":{"prompt_tokens":1' + b"0" * 40 + b"}}\n\n"],
    "usage_float": [_raw_usage({"prompt_tokens": 1e300, "completion_tokens": 4})],
    "cached_over_prompt": [
        _raw_usage(
            {
                "prompt_tokens": 10,
                "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 99},
            }
        )
    ],
    "details_str": [
        _raw_usage({"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": "lots"})
    ],
    "timings_str": [_chunk({"id": "c", "choices": [], "timings": "x"})],
    "json_choices_str": {"choices": "oops", "usage": {"prompt_tokens": 7, "completion_tokens": 1}},
    "json_choices_int": {"choices": [5], "usage": {"prompt_tokens": 7, "completion_tokens": 1}},
    "json_message_str": {"choices": [{"message": "hi"}], "usage": {"prompt_tokens": 7}},
    "json_usage_str": {"choices": [], "usage": "lots"},
    "json_cache_lots": {
        "type": "message",
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": "lots"},
    },
    "json_negative": {"choices": [], "usage": {"prompt_tokens": -30, "completion_tokens": 1}},
    "json_list": [1, 2, 3],
    "json_timings_str": {"choices": [], "usage": {"prompt_tokens": 7}, "timings": [1]},
    # Anthropic-shaped events (for --api messages)
    "msg_delta_str": [_chunk({"type": "content_block_delta", "index": 0, "delta": "abc"})],
    "msg_start_str": [_chunk({"type": "message_start", "message": "x"})],
    "msg_usage_lots": [
        _chunk(
            {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": "lots"}},
            }
        )
    ],
    "msg_negative": [
        _chunk({"type": "message_start", "message": {"usage": {"input_tokens": -30}}}),
        _chunk(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            }
        ),
    ],
    "msg_index_str": [
        _chunk(
            {
                "type": "content_block_start",
                "index": "a",
                "content_block": {"type": "tool_use", "id": 5, "name": []},
            }
        )
    ],
    # Responses-shaped events (for --api native on a Responses trace)
    "resp_response_str": [_chunk({"type": "response.completed", "response": "x"})],
    "resp_usage_negative": [
        _chunk(
            {
                "type": "response.completed",
                "response": {"status": "completed", "usage": {"input_tokens": -1}},
            }
        )
    ],
}


def _usage(prompt: int, completion: int, cached: int | None) -> bytes:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return _chunk({"id": "c", "choices": [], "usage": usage})


class FaultServer:
    def __init__(
        self,
        stall_s: float = 30.0,
        slow_s: float = 0.5,
        *,
        api_key: str | None = None,
        metrics: str | None = None,
        models: list[dict[str, Any]] | None = None,
    ) -> None:
        self.stall_s = stall_s
        self.slow_s = slow_s
        self.api_key = api_key  # when set, /v1/models answers 401 without it
        self.metrics = metrics  # Prometheus text for /metrics (404 when None)
        self.models = models if models is not None else [{"id": MODEL, "owned_by": "fault"}]
        self.requests: list[dict[str, Any]] = []  # bodies received, in order
        self.auth: list[str | None] = []  # Authorization header of each
        self.queries: list[str] = []  # query string of every request (models, chat, metrics)
        self.hold = asyncio.Event()  # "hold" fault waits on this (set from the server loop)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self.port = 0
        self.on_request: Callable[[dict[str, Any]], None] | None = None
        # (status, JSON body) every model request gets once ``reject_after`` have been answered
        # (0: all of them), whatever the body says: a server that rejects the run's requests
        self.reject: tuple[int, dict[str, Any]] | None = None
        self.reject_after = 0
        self.reject_only_tools = False  # reject only requests that offer tools (no tool parser)
        self.big_event_bytes = 20 * 1024 * 1024  # the "big_event" fault's one SSE event

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- handlers ------------------------------------------------------------------------------

    async def list_models(self, request: web.Request) -> web.Response:
        self.queries.append(request.query_string)
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        return web.json_response({"object": "list", "data": self.models})

    async def prometheus(self, request: web.Request) -> web.Response:
        self.queries.append(request.query_string)
        if self.metrics is None:
            raise web.HTTPNotFound()
        return web.Response(text=self.metrics, content_type="text/plain")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw)
        self.requests.append(body)
        self.auth.append(request.headers.get("authorization"))
        self.queries.append(request.query_string)
        if self.on_request is not None:
            self.on_request(body)
        if (
            self.reject is not None
            and len(self.requests) > self.reject_after
            and (body.get("tools") or not self.reject_only_tools)
        ):
            return web.json_response(self.reject[1], status=self.reject[0])
        m = FAULT.search(raw)
        fault = m.group(1).decode() if m else "ok"
        n = int(body.get("max_tokens") or 4)
        if fault == "http500":
            return web.json_response({"error": {"message": "engine exploded"}}, status=500)
        if fault == "http400":
            return web.json_response({"error": {"message": "context too long"}}, status=400)
        if fault == "echo_key_401":  # a server that repeats the credential it was sent
            said = request.headers.get("authorization")
            return web.json_response({"error": {"message": f"invalid key: {said}"}}, status=401)
        hostile = HOSTILE.get(fault)
        if isinstance(hostile, dict | list) and fault.startswith("json_"):
            return web.json_response(hostile)
        if fault == "json":  # ignores stream=true
            return web.json_response(
                {
                    "choices": [{"message": {"role": "assistant", "content": "hi"}}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 1},
                }
            )
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        if fault == "stall":
            await asyncio.sleep(self.stall_s)
            return resp
        await resp.write(ROLE)
        if isinstance(hostile, list):
            await resp.write(_token(0))
            for event in hostile:
                await resp.write(event)
            if fault.startswith("msg_"):
                await resp.write(_chunk({"type": "message_stop"}))
            elif not fault.startswith("resp_"):
                await resp.write(FINISH + b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        if fault == "big_event":  # one token chunk of big_event_bytes, in 64 KiB writes
            text = b"x" * self.big_event_bytes
            event = b'data: {"choices":[{"index":0,"delta":{"content":"' + text + b'"}}]}\n\n'
            for i in range(0, len(event), 65536):
                await resp.write(event[i : i + 65536])
            await resp.write(FINISH + _usage(10, 1, 0) + b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        if fault == "hold":
            await self.hold.wait()
        if fault == "slow":
            await asyncio.sleep(self.slow_s)
        for i in range(n):
            await resp.write(_token(i))
            if fault == "die" and i == 1:  # the whole server goes away mid-stream
                asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)
                await asyncio.sleep(3600)
            if fault == "reset" and i == 1:
                assert request.transport is not None
                request.transport.abort()
                return resp
            if fault == "malformed" and i == 1:
                await resp.write(b"data: {not json\n\n")
            if fault == "echo_key_event" and i == 1:
                said = request.headers.get("x-api-key") or request.headers.get("authorization")
                await resp.write(_chunk({"error": {"message": f"quota exceeded for {said}"}}))
            if fault == "error_event" and i == 1:
                await resp.write(_chunk({"error": {"message": "oom while decoding", "code": 500}}))
        if fault == "truncated":
            await resp.write_eof()
            return resp
        await resp.write(FINISH)
        if fault != "nousage":
            cached = 0 if fault != "cached" else 3
            await resp.write(_usage(10, n, None if fault == "nocached" else cached))
        if fault == "keepalive":
            await resp.write(b": keep-alive\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    # -- lifecycle -----------------------------------------------------------------------------

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self.hold = asyncio.Event()
        app = web.Application(client_max_size=64 << 20)  # corpus-sized prompts
        app.router.add_get("/v1/models", self.list_models)
        app.router.add_get("/metrics", self.prometheus)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/messages", self.chat)
        app.router.add_post("/v1/responses", self.chat)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        loop.run_until_complete(site.start())
        self.port = self._runner.addresses[0][1]
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        pending = asyncio.all_tasks(loop)  # handlers still sleeping (stall, die)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
        self._stopped.set()

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._main, daemon=True, name="fault-server")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault server did not start")
        return self

    def release(self) -> None:
        """Let requests held by the ``hold`` fault go on."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.hold.set)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
