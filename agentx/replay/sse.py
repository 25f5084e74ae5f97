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
"""

from __future__ import annotations

from typing import Any

import orjson

from agentx.models import (
    API_ANTHROPIC_MESSAGES,
    API_GEMINI,
    API_OPENAI_CHAT,
    API_OPENAI_RESPONSES,
    JSON,
    Usage,
)
from agentx.usage import checked_usage, merge_usage

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
            data = data.replace(b"\r\n", b"\n")
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
            raise StreamProtocolError(f"server error event: {_error_text(error or obj)}")
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


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)[:200]
    return str(error)[:200]


class ChatStreamParser(StreamParser):
    """OpenAI ``/v1/chat/completions`` (vLLM, SGLang, llama.cpp, TRT-LLM, Dynamo, ...).

    The hottest loop of a replay: ``feed`` is specialised (locals, one dict lookup per field)
    for the common one-line ``data: {...}`` event; everything else takes the generic path.
    """

    __slots__ = ()
    api = API_OPENAI_CHAT

    def feed(self, data: bytes, t_ns: int) -> None:
        events = self._split(data)
        if events:
            self._events(events, t_ns)

    def _events(self, events: list[bytes], t_ns: int) -> None:
        loads = orjson.loads
        first = self.first_token_ns
        last = self.last_token_ns
        count = self.token_chunks
        event = b""
        try:
            for event in events:
                obj = None
                if event.startswith(b"data: ") and b"\n" not in event:
                    try:  # noqa: SIM105 - try/except is cheaper than suppress() in this loop
                        obj = loads(event[6:])
                    except orjson.JSONDecodeError:
                        pass
                if obj is None:  # "[DONE]", comments, multi-line or malformed events
                    if event:
                        self.last_token_ns, self.token_chunks = last, count
                        self._multiline(event, t_ns)
                        first, last, count = (
                            self.first_token_ns,
                            self.last_token_ns,
                            self.token_chunks,
                        )
                    continue
                if type(obj) is not dict or "error" in obj or "type" in obj:
                    self._check(obj)
                choices = obj.get("choices")
                if choices:
                    choice = choices[0]
                    delta = choice.get("delta")
                    if delta:
                        content = delta.get("content")
                        if content:
                            if type(content) is not str:
                                raise TypeError(f"delta content is {type(content).__name__}")
                            token = True
                        else:
                            calls = delta.get("tool_calls")
                            if calls:
                                _check_tool_calls(calls)
                            token = bool(
                                delta.get("reasoning_content") or delta.get("reasoning") or calls
                            )
                        if token:
                            if first is None:
                                first = self.first_token_ns = t_ns
                            else:
                                self.itl_ns.append(t_ns - last)
                            last = t_ns
                            count += 1
                            if content and self.first_content_ns is None:
                                self.first_content_ns = t_ns
                            if self.live:
                                self._accumulate(delta)
                    reason = choice.get("finish_reason")
                    if reason is not None:
                        if type(reason) is not str:
                            raise TypeError(f"finish_reason is {type(reason).__name__}")
                        if reason:
                            self.finish_reason = reason
                if obj.get("usage") or "timings" in obj:
                    self._usage(obj)
        except SHAPE_ERRORS as exc:
            raise shape_error(exc, event) from None
        finally:
            self.last_token_ns = last
            self.token_chunks = count

    def _check(self, obj: Any) -> None:
        if type(obj) is not dict:
            raise StreamProtocolError(f"SSE data is not a JSON object: {str(obj)[:80]!r}")
        if obj.get("error") or obj.get("type") == "error":
            raise StreamProtocolError(f"server error event: {_error_text(obj.get('error') or obj)}")

    def _accumulate(self, delta: dict[str, Any]) -> None:
        if delta.get("content"):
            self.text_parts.append(delta["content"])
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self.reasoning_parts.append(reasoning)
        for call in delta.get("tool_calls") or ():
            fn = call.get("function") or {}
            self._tool_delta(
                call.get("index", 0), call.get("id"), fn.get("name"), fn.get("arguments")
            )

    def _usage(self, obj: dict[str, Any]) -> None:
        usage = obj.get("usage")
        timings = obj.get("timings")  # llama.cpp reports its prompt cache here
        if usage:
            self._set(*checked_usage(API_OPENAI_CHAT, usage, timings))
        elif isinstance(timings, dict) and self.cached_tokens is None:
            self.cached_tokens = checked_usage(API_OPENAI_CHAT, None, timings)[0].cached_tokens

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        """The generic path: multi-line events, ``[DONE]``, malformed data."""
        if payload.strip() == b"[DONE]":
            self.done = True
            return
        obj = self._load(payload)
        # re-enter the fast path with one well-formed event, so both paths agree by construction
        self._events([b"data: " + orjson.dumps(obj)], t_ns)


class MessagesStreamParser(StreamParser):
    """Anthropic ``/v1/messages``. Prompt total = input + cache reads + cache writes."""

    __slots__ = ("_usage_raw",)
    api = API_ANTHROPIC_MESSAGES

    def __init__(self, live: bool = False) -> None:
        super().__init__(live)
        self._usage_raw: dict[str, Any] = {}  # message_start's usage, updated by message_delta's

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):  # named by checked_usage: "usage is not an object"
            self._set(*checked_usage(API_ANTHROPIC_MESSAGES, usage))
            return
        merge_usage(self._usage_raw, usage)
        self._set(*checked_usage(API_ANTHROPIC_MESSAGES, self._usage_raw))

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        obj = self._load(payload)
        kind = obj.get("type")
        if kind in ("content_block_delta", "content_block_start"):
            index = obj.get("index", 0)
            if type(index) is not int:
                raise StreamProtocolError(f"{kind}: index is not an integer: {index!r:.40}")
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = delta.get("text")
                if text:
                    if type(text) is not str:
                        raise StreamProtocolError("text_delta: text is not a string")
                    self._token(t_ns, True)
                    if self.live:
                        self.text_parts.append(text)
            elif dtype in ("thinking_delta", "input_json_delta"):
                piece = (
                    delta.get("thinking")
                    if dtype == "thinking_delta"
                    else delta.get("partial_json")
                )
                if piece:
                    self._token(t_ns, False)
                    if self.live and dtype == "input_json_delta":
                        self._tool_delta(obj.get("index", 0), None, None, piece)
        elif kind == "content_block_start":
            block = obj.get("content_block") or {}
            if self.live and block.get("type") == "tool_use":
                self._tool_delta(obj.get("index", 0), block.get("id"), block.get("name"), "")
        elif kind == "message_start":
            usage = (obj.get("message") or {}).get("usage")
            if usage is not None:
                self._usage(usage)
        elif kind == "message_delta":
            usage = obj.get("usage")
            if usage is not None:
                self._usage(usage)
            stop = (obj.get("delta") or {}).get("stop_reason")
            if stop:
                self.finish_reason = stop
        elif kind == "message_stop":
            self.done = True


class ResponsesStreamParser(StreamParser):
    """OpenAI ``/v1/responses`` streaming events."""

    __slots__ = ()
    api = API_OPENAI_RESPONSES

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        obj = self._load(payload)
        kind = obj.get("type") or (name.decode() if name else "")
        if kind == "response.output_text.delta":
            if obj.get("delta"):
                self._token(t_ns, True)
                if self.live:
                    self.text_parts.append(obj["delta"])
        elif kind in (
            "response.reasoning_text.delta",
            "response.reasoning_summary_text.delta",
            "response.function_call_arguments.delta",
        ):
            if obj.get("delta"):
                self._token(t_ns, False)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = obj.get("response") or {}
            usage = response.get("usage")
            if usage is not None:
                self._set(*checked_usage(API_OPENAI_RESPONSES, usage))
            self.finish_reason = response.get("status") or kind
            if kind == "response.failed":
                raise StreamProtocolError(f"response failed: {_error_text(response.get('error'))}")
            self.done = True


class GeminiStreamParser(StreamParser):
    """Gemini ``:streamGenerateContent?alt=sse``: each event a whole ``GenerateContentResponse``;
    no end marker, the stream is done once candidate 0 has a ``finishReason``."""

    __slots__ = ("_usage_raw",)
    api = API_GEMINI

    def __init__(self, live: bool = False) -> None:
        super().__init__(live)
        self._usage_raw: dict[str, Any] = {}

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        obj = self._load(payload)
        for cand in obj.get("candidates") or ():
            if not isinstance(cand, dict) or (cand.get("index") or 0) != 0:
                continue
            for part in (cand.get("content") or {}).get("parts") or ():
                if not isinstance(part, dict):
                    continue
                text = part.get("text")
                call = part.get("functionCall")
                if text:
                    if type(text) is not str:
                        raise StreamProtocolError("Gemini part text is not a string")
                    content = not part.get("thought")
                    self._token(t_ns, content)
                    if self.live and content:
                        self.text_parts.append(text)
                elif isinstance(call, dict):
                    self._token(t_ns, False)
                    if self.live:
                        args = orjson.dumps(call.get("args") or {}).decode()
                        self._tool_delta(
                            len(self.tool_calls), call.get("id"), call.get("name"), args
                        )
            if cand.get("finishReason"):
                self.finish_reason = str(cand["finishReason"])
                self.done = True
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict) and usage:
            merge_usage(self._usage_raw, usage)
            self._set(*checked_usage(API_GEMINI, self._usage_raw))
        elif usage:  # named by checked_usage: "usage is not an object"
            self._set(*checked_usage(API_GEMINI, usage))


def _check_tool_calls(calls: Any) -> None:
    """A chat delta's ``tool_calls``: a list of objects with an integer index and an object
    ``function`` (checked on every tool-call chunk, live or not: they are few)."""
    if type(calls) is not list:
        raise TypeError(f"tool_calls is {type(calls).__name__}")
    for call in calls:
        if type(call.get("index", 0)) is not int:
            raise TypeError("tool call index is not an integer")
        fn = call.get("function")
        if fn is not None and type(fn) is not dict:
            raise TypeError(f"tool call function is {type(fn).__name__}")


def parser_for(api: str, live: bool = False) -> StreamParser:
    if api == API_ANTHROPIC_MESSAGES:
        return MessagesStreamParser(live)
    if api == API_OPENAI_RESPONSES:
        return ResponsesStreamParser(live)
    if api == API_GEMINI:
        return GeminiStreamParser(live)
    return ChatStreamParser(live)
