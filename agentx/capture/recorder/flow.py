"""One exchange in flight: the request as parsed, and the response as it streams in.

Each chunk is timestamped, decoded (``Content-Encoding``) and, for an SSE response, parsed into
events as it arrives, so the first token's time is known without buffering the stream; a JSON
body is buffered (up to a limit) and assembled at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.assemble import Assembled, Assembler
from agentx.apis.encodings import StreamDecoder
from agentx.apis.registry import family
from agentx.apis.sse import SSEParser
from agentx.capture.sessions.placement import Placement
from agentx.core.models import JSON

MAX_MODEL_BODY = 64 * 1024 * 1024
MAX_OTHER_BODY = 256 * 1024


def body_limit(api: str) -> int:
    """The largest body of ``api`` that is parsed (a larger one is recorded without it)."""
    return MAX_MODEL_BODY if api != Api.OTHER else MAX_OTHER_BODY


@dataclass(slots=True)
class Flow:
    request_id: str
    api: str
    start_ns: int
    wall_ns: int
    method: str
    path: str
    host: str | None
    body: JSON
    client: str | None
    agent: str | None
    credentials: tuple[Any, ...]
    flags: list[str]
    placement: Placement | None = None
    status: int | None = None
    ttfb_ns: int | None = None
    ttft_ns: int | None = None
    offsets: list[int] = field(default_factory=list)
    sse: SSEParser | None = None
    assembler: Assembler | None = None
    decoder: StreamDecoder | None = None
    buf: bytearray = field(default_factory=bytearray)
    buf_full: bool = False
    decode_error: str | None = None
    resolved_input: list[JSON] | None = None

    def on_headers(self, t_ns: int, status: int, ctype: str | None, cenc: str | None) -> None:
        self.status = status
        self.ttfb_ns = t_ns - self.start_ns
        try:
            self.decoder = StreamDecoder(cenc)
        except ValueError as exc:
            self.decode_error = str(exc)
        if self.api != Api.OTHER:
            self.assembler = family(self.api).assembler()
            if ctype and "text/event-stream" in ctype.lower():
                self.sse = SSEParser()

    def on_data(self, t_ns: int, chunk: bytes) -> None:
        off = t_ns - self.start_ns
        self.offsets.append(off)
        if self.decode_error is not None:
            return
        data = chunk
        if self.decoder is not None and not self.decoder.identity:
            try:
                data = self.decoder.feed(chunk)
            except Exception as exc:
                self.decode_error = f"cannot decode response body: {exc}"
                return
        if self.sse is not None and self.assembler is not None:
            for ev in self.sse.feed(data):
                if self.assembler.event(ev) and self.ttft_ns is None:
                    self.ttft_ns = off
        elif not self.buf_full:
            if len(self.buf) + len(data) > body_limit(self.api):
                self.buf_full = True
                self.buf.clear()
            else:
                self.buf += data

    def assemble(self) -> tuple[Assembled | None, JSON]:
        """The response as assembled (``None`` for a non-model call or one without headers),
        and the buffered JSON body (``None`` for a stream, an oversized or malformed body)."""
        body_json: JSON = None
        if self.sse is None and self.buf and not self.buf_full:
            try:
                body_json = orjson.loads(bytes(self.buf))
            except orjson.JSONDecodeError:
                body_json = None
        if self.assembler is None:
            return None, body_json
        if self.sse is None and body_json is not None:
            self.assembler.body(body_json)
        return self.assembler.result(), body_json
