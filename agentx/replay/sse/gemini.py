"""The Gemini streamGenerateContent parser."""

from __future__ import annotations

from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.usage import checked_usage, merge_usage
from agentx.replay.sse.base import StreamParser, StreamProtocolError


class GeminiStreamParser(StreamParser):
    """Gemini ``:streamGenerateContent?alt=sse``: each event a whole ``GenerateContentResponse``;
    no end marker, the stream is done once candidate 0 has a ``finishReason``."""

    __slots__ = ("_usage_raw",)
    api = Api.GEMINI

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
            self._set(*checked_usage(Api.GEMINI, self._usage_raw))
        elif usage:  # named by checked_usage: "usage is not an object"
            self._set(*checked_usage(Api.GEMINI, usage))
