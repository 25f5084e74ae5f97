"""The OpenAI chat-completions stream parser: the hot path of a replay."""

from __future__ import annotations

from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.usage import checked_usage
from agentx.replay.sse.base import (
    SHAPE_ERRORS,
    StreamParser,
    StreamProtocolError,
    error_text,
    shape_error,
)


class ChatStreamParser(StreamParser):
    """OpenAI ``/v1/chat/completions`` (vLLM, SGLang, llama.cpp, TRT-LLM, Dynamo, ...).

    The hottest loop of a replay: ``feed`` is specialised (locals, one dict lookup per field)
    for the common one-line ``data: {...}`` event; everything else takes the generic path.
    """

    __slots__ = ()
    api = Api.OPENAI_CHAT

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
            raise StreamProtocolError(f"server error event: {error_text(obj.get('error') or obj)}")

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
            self._set(*checked_usage(Api.OPENAI_CHAT, usage, timings))
        elif isinstance(timings, dict) and self.cached_tokens is None:
            self.cached_tokens = checked_usage(Api.OPENAI_CHAT, None, timings)[0].cached_tokens

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        """The generic path: multi-line events, ``[DONE]``, malformed data."""
        if payload.strip() == b"[DONE]":
            self.done = True
            return
        obj = self._load(payload)
        # re-enter the fast path with one well-formed event, so both paths agree by construction
        self._events([b"data: " + orjson.dumps(obj)], t_ns)


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
