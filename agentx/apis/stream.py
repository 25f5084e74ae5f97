"""What every replay stream parser shares: SSE splitting on each read (linear in the event size),
token timing, usage, the assistant turn for ``--assistant live``, and protocol errors. One
subclass per API family, in the family's module (``ChatStreamParser`` in
:mod:`agentx.apis.openai_chat`, ...; the family's ``stream_parser``).

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
"""

from __future__ import annotations

from typing import Any

import orjson

from agentx.core.models import JSON, Usage

SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError)


class StreamProtocolError(Exception):
    """The stream is not the SSE/JSON it should be, or the server sent an error event."""


def shape_error(exc: Exception, event: bytes | None = None) -> StreamProtocolError:
    """Valid JSON of an unexpected shape (``"choices": "oops"``), as a protocol error."""
    where = f" in {event[:80]!r}" if event is not None else ""
    return StreamProtocolError(f"unexpected event shape{where} ({type(exc).__name__}: {exc})")


class StreamParser:
    """State of one response stream. Subclasses know their API family's events."""

    api = ""
    __slots__ = (
        "_carry",
        "_parts",
        "_tail_nl",
        "cached_tokens",
        "completion_tokens",
        "done",
        "finish_reason",
        "first_content_ns",
        "first_token_ns",
        "itl_ns",
        "last_token_ns",
        "live",
        "prompt_tokens",
        "reasoning_parts",
        "text_parts",
        "token_chunks",
        "tool_calls",
        "usage_problem",
        "usage_seen",
    )

    def __init__(self, live: bool = False) -> None:
        self._parts: list[bytes] = []  # the event in progress, as read
        self._tail_nl = False  # the event in progress ends with a newline
        self._carry = b""  # a "\r" that may be the first half of "\r\n"
        self.live = live  # accumulate the assistant turn (text, tool calls)
        self.done = False  # the stream's terminal event arrived
        self.first_token_ns: int | None = None
        self.first_content_ns: int | None = None
        self.last_token_ns = 0
        self.itl_ns: list[int] = []
        self.token_chunks = 0
        self.usage_seen = False
        self.usage_problem: str | None = None  # impossible counts the usage block carried
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.finish_reason: str | None = None
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.tool_calls: dict[int, dict[str, str]] = {}

    # -- the hot path -------------------------------------------------------------------------

    def _split(self, data: bytes) -> list[bytes]:
        """The events this read completes (the rest is kept): linear in the bytes read."""
        if self._carry:
            data, self._carry = self._carry + data, b""
        if b"\r" in data:
            if data.endswith(b"\r"):
                data, self._carry = data[:-1], b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")  # SSE allows CR alone
        parts = self._parts
        if parts:
            if b"\n\n" not in data and not (self._tail_nl and data.startswith(b"\n")):
                if data:
                    parts.append(data)
                    self._tail_nl = data.endswith(b"\n")
                return []  # the event goes on: no join, no scan of what came before
            parts.append(data)
            data = b"".join(parts)
            self._parts = parts = []
        events = data.split(b"\n\n")
        rest = events.pop()
        if rest:
            parts.append(rest)
            self._tail_nl = rest.endswith(b"\n")
        return events

    def feed(self, data: bytes, t_ns: int) -> None:
        """Consume one read. Raises :class:`StreamProtocolError` on malformed input."""
        for event in self._split(data):
            try:
                if event.startswith(b"data: ") and b"\n" not in event:
                    self._data(None, event[6:], t_ns)
                elif event:
                    self._multiline(event, t_ns)
            except SHAPE_ERRORS as exc:
                raise shape_error(exc, event) from None

    def _multiline(self, event: bytes, t_ns: int) -> None:
        name: bytes | None = None
        data: list[bytes] = []
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line.startswith(b"event:"):
                name = line[6:].strip()
            # ":" comments (keep-alives), "id:", "retry:" and blank lines carry nothing we need
        if data:
            self._data(name, b"\n".join(data), t_ns)

    def _token(self, t_ns: int, content: bool) -> None:
        if self.first_token_ns is None:
            self.first_token_ns = t_ns
        else:
            self.itl_ns.append(t_ns - self.last_token_ns)
        self.last_token_ns = t_ns
        self.token_chunks += 1
        if content and self.first_content_ns is None:
            self.first_content_ns = t_ns

    def _load(self, payload: bytes) -> dict[str, Any]:
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise StreamProtocolError(f"malformed SSE data: {payload[:80]!r}") from None
        if not isinstance(obj, dict):
            raise StreamProtocolError(f"SSE data is not a JSON object: {payload[:80]!r}")
        error = obj.get("error")
        if error or obj.get("type") == "error":
            raise StreamProtocolError(f"server error event: {server_error_text(error or obj)}")
        return obj

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        raise NotImplementedError

    def finish(self, t_ns: int) -> None:
        """End of body: a complete last event without its blank line still counts."""
        rest = b"".join(self._parts) + self._carry
        self._parts, self._carry = [], b""
        if rest.strip():
            self.feed(rest + b"\n\n", t_ns)

    # -- results ------------------------------------------------------------------------------

    def assistant_message(self) -> JSON:
        """The assistant turn as an OpenAI chat message (for ``--assistant live``)."""
        message: dict[str, JSON] = {"role": "assistant", "content": "".join(self.text_parts)}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{index}",
                    "type": "function",
                    "function": {
                        "name": call.get("name", ""),
                        "arguments": call.get("arguments", ""),
                    },
                }
                for index, call in sorted(self.tool_calls.items())
            ]
        return message

    def _set(self, usage: Usage, problem: str | None) -> None:
        self.usage_seen = True
        self.usage_problem = problem
        self.prompt_tokens = usage.prompt_tokens
        self.completion_tokens = usage.completion_tokens
        self.cached_tokens = usage.cached_tokens

    def _tool_delta(self, index: Any, call_id: Any, name: Any, arguments: Any) -> None:
        if type(index) is not int:
            raise StreamProtocolError(f"tool call index is not an integer: {index!r:.40}")
        call = self.tool_calls.setdefault(index, {})
        if isinstance(call_id, str) and call_id:
            call["id"] = call_id
        if isinstance(name, str) and name:
            call["name"] = call.get("name", "") + name
        if isinstance(arguments, str):
            call["arguments"] = call.get("arguments", "") + arguments


def server_error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)[:200]
    return str(error)[:200]
