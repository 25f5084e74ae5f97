"""The loopback SSE server and the in-process clients of ``bench_client.py``.

The server answers every POST with a vLLM-shaped chat-completions stream of ``chunks`` token
events (plus the role, finish, usage and ``[DONE]`` frames), one HTTP chunk per event, ``per_write``
events per socket write; ``GET /v1/models`` gets a model list (for tools that probe it).

Each in-process client opens ``streams`` concurrent streams and does the same work per chunk:
timestamp per read, split events, decode each event's JSON, note TTFT/ITL and usage.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from collections.abc import Awaitable, Callable

MODEL = "bench"


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def build_stream(chunks: int) -> list[bytes]:
    """``chunks`` token events plus the role, finish, usage and [DONE] frames, as HTTP chunks."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    frames = [
        _event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    ]
    for i in range(chunks):
        choice = {"index": 0, "delta": {"content": f" tok{i % 97}"}}
        choice.update(logprobs=None, finish_reason=None)
        frames.append(_event({**base, "choices": [choice]}))
    frames.append(
        _event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    )
    usage = {"prompt_tokens": 10, "completion_tokens": chunks, "total_tokens": chunks + 10}
    usage["prompt_tokens_details"] = {"cached_tokens": 0}  # type: ignore[assignment]
    frames.append(_event({**base, "choices": [], "usage": usage}))
    frames.append(b"data: [DONE]\n\n")
    return [_chunked(f) for f in frames]


async def serve(port: int, chunks: int, per_write: int, ready: Callable[[], None]) -> None:
    frames = build_stream(chunks)
    writes = [b"".join(frames[i : i + per_write]) for i in range(0, len(frames), per_write)]
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
    )
    models = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
    listing = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
    listing %= (len(models), models)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in header.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                if header.startswith(b"GET"):
                    writer.write(listing)
                    continue
                writer.write(head)
                for piece in writes:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)  # interleave the streams, as a batching server does
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    ready()
    async with server:
        await server.serve_forever()


BODY = json.dumps(
    {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 1000,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
).encode()


async def client_agentx(url: str, streams: int) -> int:
    """What the replay lanes run: agentx.replay.client.stream_request on the lanes' client."""
    from agentx.replay.client import make_stream_client, stream_request

    async with make_stream_client(url, timeout_s=60, max_connections=streams) as http:
        outs = await asyncio.gather(
            *(
                stream_request(http, "/v1/chat/completions", BODY, "openai.chat")
                for _ in range(streams)
            )
        )
    bad = [o for o in outs if not o.ok]
    if bad:
        raise SystemExit(f"agentx client errors: {bad[0].error}")
    return sum(len(o.itl_ns) + 1 for o in outs)


async def client_agentx_httpx(url: str, streams: int) -> int:
    """agentx's earlier lane transport: httpx's API on httpx-aiohttp's, the same parser."""
    from agentx.apis.openai_chat import ChatStreamParser
    from agentx.replay.client import make_http_client

    async def one(http: object) -> int:
        parser = ChatStreamParser()
        async with http.stream("POST", "/v1/chat/completions", content=BODY) as response:  # type: ignore[attr-defined]
            async for data in response.aiter_raw():
                parser.feed(data, time.perf_counter_ns())
        return len(parser.itl_ns) + 1

    async with make_http_client(url, timeout_s=60, max_connections=streams) as http:
        counts = await asyncio.gather(*(one(http) for _ in range(streams)))
    return sum(counts)


async def client_vllm_loop(url: str, streams: int) -> int:
    """The per-request loop of `vllm bench serve` (vllm/benchmarks/lib/endpoint_request_func.py)."""
    import aiohttp

    class Handler:
        def __init__(self) -> None:
            self.buffer = ""
            self._decoder = codecs.getincrementaldecoder("utf-8")()

        def add_chunk(self, chunk_bytes: bytes) -> list[str]:
            self.buffer += self._decoder.decode(chunk_bytes)
            messages = []
            while "\n\n" in self.buffer:
                message, self.buffer = self.buffer.split("\n\n", 1)
                message = message.strip()
                if message:
                    messages.append(message)
            if self.buffer.startswith("data: "):
                content = self.buffer.removeprefix("data: ").strip()
                if content == "[DONE]":
                    messages.append(self.buffer.strip())
                    self.buffer = ""
                elif content:
                    try:
                        json.loads(content)
                        messages.append(self.buffer.strip())
                        self.buffer = ""
                    except json.JSONDecodeError:
                        pass
            return messages

    async def one(session: aiohttp.ClientSession) -> int:
        st = time.perf_counter()
        recent = st
        itl: list[float] = []
        first = False
        async with session.post(url=url + "/v1/chat/completions", data=BODY) as response:
            handler = Handler()
            async for chunk_bytes in response.content.iter_any():
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                for message in handler.add_chunk(chunk_bytes):
                    if message.startswith(":"):
                        continue
                    chunk = message.removeprefix("data: ")
                    if chunk != "[DONE]":
                        timestamp = time.perf_counter()
                        data = json.loads(chunk)
                        if choices := data.get("choices"):
                            _ = choices[0]["delta"].get("content")
                            if not first:
                                first = True
                            else:
                                itl.append(timestamp - recent)
                            recent = timestamp
                        elif usage := data.get("usage"):
                            _ = usage.get("completion_tokens")
        return len(itl) + 1

    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    connector = aiohttp.TCPConnector(limit=streams)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        counts = await asyncio.gather(*(one(session) for _ in range(streams)))
    # vLLM's loop counts the role-only and finish frames as chunks too; count them alike
    return sum(counts)


RUNNERS: dict[str, Callable[[str, int], Awaitable[int]]] = {
    "agentx": client_agentx,
    "agentx-asyncio": client_agentx,  # the same, on asyncio's loop (AGENTX_LOOP=asyncio)
    "agentx-httpx": client_agentx_httpx,
    "vllm-loop": client_vllm_loop,
}


def measure(name: str, url: str, streams: int) -> dict[str, float]:
    """One measurement in this (fresh, pinned) process: chunks, wall and CPU seconds."""
    from agentx.replay import loop

    async def main() -> dict[str, float]:
        await RUNNERS[name](url, 1)  # warm the imports and the connection path
        cpu0, t0 = time.process_time(), time.perf_counter()
        chunks = await RUNNERS[name](url, streams)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        return {"chunks": chunks, "wall_s": wall, "cpu_s": cpu}

    if name == "agentx":
        return loop.run(main())  # the lanes' loop: uvloop where installed
    return asyncio.run(main())
