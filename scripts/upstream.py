"""A scripted model upstream for capture tests: Anthropic Messages, OpenAI Chat and Responses.
The capture tests and ``scripts/agents/scripted_upstream.py`` (real agents) both build on it.

Answers depend on the request: while a conversation holds fewer than ``TOOL_TURNS`` tool
results, the model calls a tool (the first one offered, else ``run``); then it answers in text.
Streams are sent one SSE event per write with ``gap_s`` between them. A last user message
containing ``ABORT`` gets a stream cut after three events; ``GZIP`` gets a gzip-encoded stream.
Usage is deterministic so tests can check the normalisation.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

TOOL_TURNS = 2


def usage_for(turn: int) -> dict[str, int]:
    """Anthropic-style usage: input excludes cache reads and writes."""
    return {"input": 7 + turn, "cache_read": 100 * turn, "cache_write": 30, "output": 11 + turn}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    t_ns: int
    method: str = "POST"


@dataclass
class Upstream:
    gap_s: float = 0.002
    seen: list[Seen] = field(default_factory=list)
    sent_events_ns: list[list[int]] = field(default_factory=list)
    _responses: dict[str, list[Any]] = field(default_factory=dict)
    url: str = ""

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> Upstream:
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self._runner = web.AppRunner(app, access_log=None)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            self._loop.run_until_complete(site.start())
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}"
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # ----------------------------------------------------------------- dispatch

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("upgrade", "").lower() == "websocket":
            return await self.websocket(request)
        raw = await request.read()
        body: Any = None
        if raw:
            data = raw
            if request.headers.get("content-encoding") == "zstd" and not raw.startswith(b"{"):
                # (aiohttp already decodes zstd request bodies where it can)
                from backports import zstd

                data = zstd.decompress(raw)
            body = orjson.loads(data)
        path = request.path_qs
        self.seen.append(
            Seen(path, dict(request.headers), body, time.monotonic_ns(), request.method)
        )
        p = request.path
        if p.endswith("/messages/count_tokens"):
            return web.json_response({"input_tokens": 42})
        if request.method == "GET" and p.endswith("/models"):
            return web.json_response({"object": "list", "data": [{"id": "scripted-1"}]})
        if p.endswith("/messages"):
            return await self.anthropic(request, body)
        if p.endswith("/chat/completions"):
            return await self.chat(request, body)
        if p.endswith("/responses"):
            return await self.responses(request, body)
        if p.endswith(":generateContent") or p.endswith(":streamGenerateContent"):
            return await self.gemini(request, body)
        return web.json_response({"error": {"message": "not found"}}, status=404)

    def choose_tool(
        self, api: str, names: list[str], turn: int, prompt: str = ""
    ) -> tuple[str, dict[str, Any]]:
        """Which tool the model calls on ``turn`` of the conversation that starts with
        ``prompt``, with which arguments (override for agents)."""
        return (names[0] if names else "run"), {"cmd": f"echo step {turn}"}

    def choose_text(self, messages: list[Any], text: str) -> str:
        """The text answer of a chat completion (override for agents that edit by text)."""
        return text

    def _first_user_text(self, items: list[Any]) -> str:
        return self._last_user_text(list(reversed(items)))

    def _last_user_text(self, items: list[Any]) -> str:
        for m in reversed(items):
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                if isinstance(c, str):
                    return c
                if isinstance(c, list):
                    return " ".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
        return ""

    async def _stream(
        self, request: web.Request, events: list[bytes], text: str
    ) -> web.StreamResponse:
        gz = "GZIP" in text
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        if gz:
            resp.headers["content-encoding"] = "gzip"
        await resp.prepare(request)
        comp = zlib.compressobj(wbits=16 + zlib.MAX_WBITS) if gz else None
        stamps: list[int] = []
        self.sent_events_ns.append(stamps)
        for i, ev in enumerate(events):
            if i:
                await asyncio.sleep(self.gap_s)
            if "ABORT" in text and i == 3:
                assert request.transport is not None
                request.transport.abort()
                return resp
            data = comp.compress(ev) + comp.flush(zlib.Z_SYNC_FLUSH) if comp else ev
            stamps.append(time.monotonic_ns())
            await resp.write(data)
        if comp:
            await resp.write(comp.flush())
        await resp.write_eof()
        return resp

    # ----------------------------------------------------------------- Anthropic

    async def anthropic(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        msgs = body.get("messages") or []
        turn = sum(
            1
            for m in msgs
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        tools = body.get("tools") or []
        name, args = self.choose_tool(
            "anthropic", [t.get("name", "") for t in tools], turn, self._first_user_text(msgs)
        )
        u = usage_for(turn)
        mid = f"msg_{uuid.uuid4().hex[:12]}"
        calls_tool = bool(tools) and turn < TOOL_TURNS and body.get("max_tokens", 2) > 1
        text = f"Step {turn}: working." if calls_tool else f"All done after {turn} tool calls."
        tool_id = f"toolu_{turn}_{uuid.uuid4().hex[:8]}"
        usage_start = {
            "input_tokens": u["input"],
            "cache_creation_input_tokens": u["cache_write"],
            "cache_read_input_tokens": u["cache_read"],
            "output_tokens": 1,
        }
        if not body.get("stream"):
            content: list[Any] = [{"type": "text", "text": text}]
            if calls_tool:
                content.append({"type": "tool_use", "id": tool_id, "name": name, "input": args})
            return web.json_response(
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": "tool_use" if calls_tool else "end_turn",
                    "stop_sequence": None,
                    "usage": {**usage_start, "output_tokens": u["output"]},
                }
            )

        def ev(kind: str, data: dict[str, Any]) -> bytes:
            return f"event: {kind}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"

        events = [
            ev(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model"),
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage_start,
                    },
                },
            ),
            ev("ping", {"type": "ping"}),
            ev(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
        ]
        words = text.split(" ")
        for i, w in enumerate(words):
            piece = w if i == 0 else " " + w
            events.append(
                ev(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        events.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
        if calls_tool:
            events.append(
                ev(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 1,
                        "content_block": {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": name,
                            "input": {},
                        },
                    },
                )
            )
            raw = orjson.dumps(args).decode()
            for part in ("", raw[:7], raw[7:]):
                events.append(
                    ev(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 1,
                            "delta": {"type": "input_json_delta", "partial_json": part},
                        },
                    )
                )
            events.append(ev("content_block_stop", {"type": "content_block_stop", "index": 1}))
        events.append(
            ev(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": "tool_use" if calls_tool else "end_turn",
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": u["output"]},
                },
            )
        )
        events.append(ev("message_stop", {"type": "message_stop"}))
        return await self._stream(request, events, self._last_user_text(msgs))

    # ----------------------------------------------------------------- OpenAI Chat

    async def chat(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        msgs = body.get("messages") or []
        turn = sum(1 for m in msgs if m.get("role") == "tool")
        tools = body.get("tools") or []
        name, args_obj = self.choose_tool(
            "chat",
            [t.get("function", {}).get("name", "") for t in tools],
            turn,
            self._first_user_text(msgs),
        )
        u = usage_for(turn)
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        calls_tool = bool(tools) and turn < TOOL_TURNS
        text = f"Step {turn}: working." if calls_tool else f"All done after {turn} tool calls."
        text = self.choose_text(msgs, text)
        call_id = f"call_{turn}_{uuid.uuid4().hex[:8]}"
        args = orjson.dumps(args_obj).decode()
        usage = {
            "prompt_tokens": u["input"] + u["cache_read"],
            "completion_tokens": u["output"],
            "total_tokens": u["input"] + u["cache_read"] + u["output"],
            "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
        model = body.get("model")
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            if calls_tool:
                msg["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                ]
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": msg,
                            "finish_reason": "tool_calls" if calls_tool else "stop",
                        }
                    ],
                    "usage": usage,
                }
            )

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            d = {
                "id": cid,
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return b"data: " + orjson.dumps(d) + b"\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        for i, w in enumerate(text.split(" ")):
            events.append(chunk({"content": w if i == 0 else " " + w}))
        if calls_tool:
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for part in (args[:5], args[5:]):
                events.append(
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
                )
        events.append(chunk({}, "tool_calls" if calls_tool else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                b"data: "
                + orjson.dumps(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
                + b"\n\n"
            )
        events.append(b"data: [DONE]\n\n")
        return await self._stream(request, events, self._last_user_text(msgs))

    # ----------------------------------------------------------------- OpenAI Responses

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        """The Responses API over a WebSocket (Codex ``supports_websockets``): each client
        message ``{"type": "response.create", ...request}`` is answered with the events of the
        streamed HTTP form, one JSON message each."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            if msg.type != web.WSMsgType.TEXT:
                continue
            obj = orjson.loads(msg.data)
            self.seen.append(
                Seen(request.path_qs, dict(request.headers), obj, time.monotonic_ns(), "WS")
            )
            if isinstance(obj, dict) and obj.get("type") == "response.create":
                inner = obj.get("response")
                body = (
                    inner
                    if isinstance(inner, dict)
                    else {k: v for k, v in obj.items() if k != "type"}
                )
                await self.responses(request, body, ws)
        return ws

    async def responses(
        self,
        request: web.Request,
        body: dict[str, Any],
        ws: web.WebSocketResponse | None = None,
    ) -> web.StreamResponse:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        prev = body.get("previous_response_id")
        context = (self._responses.get(prev, []) if prev else []) + list(items)
        turn = sum(
            1
            for it in context
            if isinstance(it, dict)
            and it.get("type") in ("function_call_output", "custom_tool_call_output")
        )
        tools = list(body.get("tools") or [])
        for it in context:  # Codex puts (namespaced) tools in an input item
            if isinstance(it, dict) and it.get("type") == "additional_tools":
                for t in it.get("tools") or []:
                    tools.extend(t.get("tools") or [t])
        name, args_obj = self.choose_tool(
            "responses",
            [t.get("name", t.get("type", "")) for t in tools],
            turn,
            self._first_user_text(context),
        )
        custom = [t for t in tools if t.get("name") == name and t.get("type") == "custom"]
        u = usage_for(turn)
        rid = f"resp_{uuid.uuid4().hex[:12]}"
        calls_tool = bool(tools) and turn < TOOL_TURNS
        text = f"Step {turn}: working." if calls_tool else f"All done after {turn} tool calls."
        call_id = f"call_{turn}_{uuid.uuid4().hex[:8]}"
        args = orjson.dumps(args_obj).decode()
        msg_item = {
            "id": f"msg_{rid}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        fc_item: dict[str, Any] = {
            "id": f"fc_{rid}",
            "type": "function_call",
            "status": "completed",
            "call_id": call_id,
            "name": name,
            "arguments": args,
        }
        if custom:  # a free-form tool: the input is the raw string
            args = str(args_obj.get("input", ""))
            fc_item = {
                "id": f"ctc_{rid}",
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "input": args,
            }
        output = [msg_item, fc_item] if calls_tool else [msg_item]
        self._responses[rid] = context + output
        base = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model"),
            "output": [],
            "status": "in_progress",
            "usage": None,
        }
        usage = {
            "input_tokens": u["input"] + u["cache_read"],
            "input_tokens_details": {"cached_tokens": u["cache_read"]},
            "output_tokens": u["output"],
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": u["input"] + u["cache_read"] + u["output"],
        }
        final = {**base, "status": "completed", "output": output, "usage": usage}
        if not body.get("stream") and ws is None:
            return web.json_response(final)
        seq = 0

        def ev(kind: str, data: dict[str, Any]) -> bytes:
            nonlocal seq
            seq += 1
            return (
                f"event: {kind}\ndata: ".encode()
                + orjson.dumps({"type": kind, "sequence_number": seq, **data})
                + b"\n\n"
            )

        events = [
            ev("response.created", {"response": base}),
            ev("response.in_progress", {"response": base}),
            ev(
                "response.output_item.added",
                {"output_index": 0, "item": {**msg_item, "status": "in_progress", "content": []}},
            ),
            ev(
                "response.content_part.added",
                {
                    "item_id": msg_item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                },
            ),
        ]
        for i, w in enumerate(text.split(" ")):
            events.append(
                ev(
                    "response.output_text.delta",
                    {
                        "item_id": msg_item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": w if i == 0 else " " + w,
                    },
                )
            )
        events.append(
            ev(
                "response.output_text.done",
                {"item_id": msg_item["id"], "output_index": 0, "content_index": 0, "text": text},
            )
        )
        events.append(ev("response.output_item.done", {"output_index": 0, "item": msg_item}))
        if calls_tool:
            field_, kind = (
                ("input", "custom_tool_call_input")
                if custom
                else ("arguments", "function_call_arguments")
            )
            events.append(
                ev(
                    "response.output_item.added",
                    {"output_index": 1, "item": {**fc_item, field_: "", "status": "in_progress"}},
                )
            )
            for part in (args[:6], args[6:]):
                events.append(
                    ev(
                        f"response.{kind}.delta",
                        {"item_id": fc_item["id"], "output_index": 1, "delta": part},
                    )
                )
            events.append(
                ev(
                    f"response.{kind}.done",
                    {"item_id": fc_item["id"], "output_index": 1, field_: args},
                )
            )
            events.append(ev("response.output_item.done", {"output_index": 1, "item": fc_item}))
        events.append(ev("response.completed", {"response": final}))
        if ws is not None:
            for i, event in enumerate(events):
                if i:
                    await asyncio.sleep(self.gap_s)
                await ws.send_str(event.split(b"data: ", 1)[1].strip().decode())
            return ws
        return await self._stream(request, events, self._last_user_text(items))

    # ----------------------------------------------------------------- Gemini

    async def gemini(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        contents = body.get("contents") or []
        turn = sum(
            1
            for c in contents
            if isinstance(c, dict)
            for part in c.get("parts") or []
            if isinstance(part, dict) and "functionResponse" in part
        )
        decls = [
            d
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
        ]
        prompt = ""
        for c in contents:
            if isinstance(c, dict) and c.get("role") == "user":
                prompt = " ".join(
                    str(p.get("text", "")) for p in c.get("parts") or [] if isinstance(p, dict)
                )
                break
        name, args = self.choose_tool("gemini", [d.get("name", "") for d in decls], turn, prompt)
        u = usage_for(turn)
        calls_tool = bool(decls) and turn < TOOL_TURNS
        text = f"Step {turn}: working." if calls_tool else f"All done after {turn} tool calls."
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":  # a structured side call
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            text = orjson.dumps(_example(schema)).decode()
        model = request.path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        usage = {
            "promptTokenCount": u["input"] + u["cache_read"],
            "cachedContentTokenCount": u["cache_read"],
            "candidatesTokenCount": u["output"],
            "thoughtsTokenCount": 2,
            "totalTokenCount": u["input"] + u["cache_read"] + u["output"] + 2,
        }
        rid = uuid.uuid4().hex[:16]
        words = text.split(" ")
        chunks: list[list[dict[str, Any]]] = [[{"text": "Thinking it over.", "thought": True}]]
        chunks += [[{"text": w if i == 0 else " " + w}] for i, w in enumerate(words)]
        if calls_tool:
            chunks.append([{"functionCall": {"name": name, "args": args}}])

        def response(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
            cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if last:
                cand["finishReason"] = "STOP"
            return {
                "candidates": [cand],
                "usageMetadata": usage if last else {"promptTokenCount": usage["promptTokenCount"]},
                "modelVersion": model,
                "responseId": rid,
            }

        if not request.path.endswith(":streamGenerateContent"):
            return web.json_response(response([p for c in chunks for p in c], True))
        if request.query.get("alt") != "sse":  # a JSON array of responses
            return web.json_response(
                [response(c, i == len(chunks) - 1) for i, c in enumerate(chunks)]
            )
        events = [
            b"data: " + orjson.dumps(response(c, i == len(chunks) - 1)) + b"\r\n\r\n"
            for i, c in enumerate(chunks)
        ]
        return await self._stream(request, events, prompt)


def _example(schema: Any) -> Any:
    """The smallest value that fits a JSON (or Gemini OpenAPI) schema: required fields only."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _example(props.get(k)) for k in schema.get("required") or []}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return "ok"


def main() -> None:  # pragma: no cover - manual use: python scripts/upstream.py [GAP_S]
    import sys

    up = Upstream(gap_s=float(sys.argv[1]) if len(sys.argv) > 1 else 0.01).start()
    print(up.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        up.stop()


if __name__ == "__main__":
    main()
