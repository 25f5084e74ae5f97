"""The Anthropic messages stream parser."""

from __future__ import annotations

from typing import Any

from agentx.apis import Api
from agentx.apis.usage import checked_usage, merge_usage
from agentx.replay.sse.base import StreamParser, StreamProtocolError


class MessagesStreamParser(StreamParser):
    """Anthropic ``/v1/messages``. Prompt total = input + cache reads + cache writes."""

    __slots__ = ("_usage_raw",)
    api = Api.ANTHROPIC_MESSAGES

    def __init__(self, live: bool = False) -> None:
        super().__init__(live)
        self._usage_raw: dict[str, Any] = {}  # message_start's usage, updated by message_delta's

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):  # named by checked_usage: "usage is not an object"
            self._set(*checked_usage(Api.ANTHROPIC_MESSAGES, usage))
            return
        merge_usage(self._usage_raw, usage)
        self._set(*checked_usage(Api.ANTHROPIC_MESSAGES, self._usage_raw))

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
