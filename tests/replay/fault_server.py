"""A small OpenAI-compatible streaming server that misbehaves on request, for replay tests.

A request whose body contains ``fault:NAME`` gets that fault; any other request gets a normal
stream of ``max_tokens`` one-token chunks with a usage block. Runs on its own thread and event
loop (``run_replay`` runs its own loop), on 127.0.0.1 and a free port.
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
        self.hold = asyncio.Event()  # "hold" fault waits on this (set from the server loop)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self.port = 0
        self.on_request: Callable[[dict[str, Any]], None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- handlers ------------------------------------------------------------------------------

    async def list_models(self, request: web.Request) -> web.Response:
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        return web.json_response({"object": "list", "data": self.models})

    async def prometheus(self, request: web.Request) -> web.Response:
        if self.metrics is None:
            raise web.HTTPNotFound()
        return web.Response(text=self.metrics, content_type="text/plain")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw)
        self.requests.append(body)
        self.auth.append(request.headers.get("authorization"))
        if self.on_request is not None:
            self.on_request(body)
        m = FAULT.search(raw)
        fault = m.group(1).decode() if m else "ok"
        n = int(body.get("max_tokens") or 4)
        if fault == "http500":
            return web.json_response({"error": {"message": "engine exploded"}}, status=500)
        if fault == "http400":
            return web.json_response({"error": {"message": "context too long"}}, status=400)
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
        app = web.Application()
        app.router.add_get("/v1/models", self.list_models)
        app.router.add_get("/metrics", self.prometheus)
        app.router.add_post("/v1/chat/completions", self.chat)
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
