"""Streaming-response parsers: one pass over each read, timestamps per read.

Each parser is fed the raw bytes of every read together with the ``perf_counter_ns`` instant of
that read. It splits server-sent events on the buffer once per read, decodes each event's JSON
with orjson exactly once, and keeps only what the row needs: when the first generated token and
the first content token arrived, the gap between successive token-carrying chunks, the usage
block, and (for ``--assistant live``) the assistant turn itself.

A *token chunk* carries any generated token: content, reasoning or a tool-call delta. Role-only
frames, keep-alive comments, ``finish_reason``-only and usage-only chunks are not token chunks.

Whatever the server sends, a parser either accepts it or raises :class:`StreamProtocolError`
(valid JSON of the wrong shape included), which the client turns into a ``protocol`` row.
Buffering is linear in the event size: a read that cannot complete an event is only appended
to a list of parts, which are joined once, when the event's blank line arrives.

One parser per API family (:mod:`.chat`, :mod:`.messages`, :mod:`.responses`, :mod:`.gemini`) on
a shared base (:mod:`.base`); :func:`parser_for` picks one for a request's API.
"""

from __future__ import annotations

from agentx.apis import Api
from agentx.replay.sse.base import SHAPE_ERRORS, StreamParser, StreamProtocolError, shape_error
from agentx.replay.sse.chat import ChatStreamParser
from agentx.replay.sse.gemini import GeminiStreamParser
from agentx.replay.sse.messages import MessagesStreamParser
from agentx.replay.sse.responses import ResponsesStreamParser

__all__ = [
    "SHAPE_ERRORS",
    "ChatStreamParser",
    "GeminiStreamParser",
    "MessagesStreamParser",
    "ResponsesStreamParser",
    "StreamParser",
    "StreamProtocolError",
    "parser_for",
    "shape_error",
]


def parser_for(api: str, live: bool = False) -> StreamParser:
    if api == Api.ANTHROPIC_MESSAGES:
        return MessagesStreamParser(live)
    if api == Api.OPENAI_RESPONSES:
        return ResponsesStreamParser(live)
    if api == Api.GEMINI:
        return GeminiStreamParser(live)
    return ChatStreamParser(live)
