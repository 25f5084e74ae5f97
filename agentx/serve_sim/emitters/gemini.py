"""Gemini generateContent: a ``GenerateContentResponse`` body, or a stream of them, one per
token: SSE ``data:`` events with ``?alt=sse``, else one JSON array sent element by element, as
Google streams it. Every chunk carries ``usageMetadata`` (the prompt's count until the last,
which has them all: ``promptTokenCount``, ``candidatesTokenCount``, ``totalTokenCount``,
``cachedContentTokenCount``), ``modelVersion`` and ``responseId``; the last has the
``finishReason``. A function call is one whole ``functionCall`` part in the first chunk (Gemini
does not stream arguments); the chunks of its other tokens are due on the same clock but empty.
"""

from __future__ import annotations

import orjson

from agentx.core.models import JSON
from agentx.serve_sim.emitters.base import SSE_CONTENT_TYPE, Pieces, UsageCounts, dumps
from agentx.serve_sim.output import OutputPlan

_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool": "STOP"}
_SSE_END = b"\r\n\r\n"
_ARRAY_SEP = b",\r\n"


def gemini_usage(u: UsageCounts) -> dict[str, JSON]:
    return {
        "promptTokenCount": u.prompt_tokens,
        "candidatesTokenCount": u.completion_tokens,
        "totalTokenCount": u.prompt_tokens + u.completion_tokens,
        "cachedContentTokenCount": u.cached_tokens,
    }


class GeminiEmitter:
    def __init__(self, response_id: str, model: str, plan: OutputPlan, seed: int, sse: bool):
        self.response_id = response_id
        self.model = model
        self.plan = plan
        self.sse = sse
        self.content_type = SSE_CONTENT_TYPE if sse else "application/json"
        self.terminator: bytes | None = b"data: " if sse else None
        self._pieces = Pieces(plan, seed)
        self._tail = b',"modelVersion":' + dumps(model) + b',"responseId":' + dumps(response_id)
        self._pre = self._post = b""  # set by opening(), which knows the prompt's size

    def _frame(self, first: bool, obj: bytes) -> bytes:
        if self.sse:
            return b"data: " + obj + _SSE_END
        return obj if first else _ARRAY_SEP + obj

    def _parts(self, text: str) -> list[JSON]:
        tc = self.plan.tool_call
        if tc is None:
            return [{"text": text}]
        return [{"functionCall": {"name": tc.name, "args": orjson.loads(tc.arguments)}}]

    def _response(self, parts: list[JSON], finish: str | None, usage: JSON) -> dict[str, JSON]:
        candidate: dict[str, JSON] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        }

    def opening(self, usage: UsageCounts) -> bytes:
        running = dumps(
            {"promptTokenCount": usage.prompt_tokens, "totalTokenCount": usage.prompt_tokens}
        )
        self._pre = b'{"candidates":[{"content":{"parts":[{"text":"'
        self._post = (
            b'"}],"role":"model"},"index":0}],"usageMetadata":' + running + self._tail + b"}"
        )
        if self.plan.tool_call is not None:  # the whole call, in the first chunk
            head = dumps(self._response(self._parts(""), None, orjson.loads(running)))
            self._pre, self._post = head, b""
        return b"" if self.sse else b"["

    def token(self, i: int) -> bytes:
        if self.plan.tool_call is not None:
            return self._frame(True, self._pre) if i == 0 else b""
        return self._frame(i == 0, self._pre + self._pieces.escaped(i) + self._post)

    def tokens(self, start: int, stop: int) -> bytes:
        return b"".join([self.token(i) for i in range(start, stop)])

    def closing(self, usage: UsageCounts) -> bytes:
        last = self._response([{"text": ""}], _FINISH[self.plan.finish], gemini_usage(usage))
        return self._frame(False, dumps(last)) + (b"" if self.sse else b"]")

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        return self._response(
            self._parts(self._pieces.text()), _FINISH[self.plan.finish], gemini_usage(usage)
        )
