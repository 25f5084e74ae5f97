"""Gemini ``generateContent`` (``models/{model}:generateContent``, and
``:streamGenerateContent?alt=sse``): every SSE event is one whole ``GenerateContentResponse``.

A stream has no end marker: it is complete once a candidate carries a ``finishReason``. Parts
are ``text`` (``thought: true`` for a thought summary), ``functionCall`` (``name``, ``args``
as an object, an optional ``id``), ``thoughtSignature`` (opaque), and rarer ``executableCode`` /
``codeExecutionResult``. ``usageMetadata`` is cumulative: the last one wins.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentx.apis.assemble import Assembled, AssemblerBase, Obj, as_obj, error_text, loads_obj
from agentx.apis.names import Api
from agentx.apis.sse import SSEEvent
from agentx.apis.usage import merge_usage, usage_from
from agentx.core.models import JSON, Response


def model_from_path(path: str) -> str | None:
    """``gemini-2.5-pro`` from ``/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse``
    (also Vertex's ``.../publishers/google/models/{model}:...``)."""
    p = path.split("?", 1)[0]
    head, sep, _method = p.rpartition(":")
    if not sep or "/models/" not in head:
        return None
    model = head.rsplit("/models/", 1)[1]
    return model or None


class GeminiAssembler(AssemblerBase):
    """Each event a ``GenerateContentResponse``; parts of candidate 0 are concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[Obj] = []  # merged: consecutive text parts of one kind are joined
        self.usage_raw: Obj = {}
        self.finish: str | None = None

    def event(self, ev: SSEEvent) -> bool:
        d = loads_obj(ev.data)
        if d is None:
            return False
        if "error" in d:
            self.error = error_text(d)
            return False
        return self._chunk(d)

    def _chunk(self, d: Obj) -> bool:
        self.id = d.get("responseId") or self.id
        self.model = d.get("modelVersion") or self.model
        merge_usage(self.usage_raw, d.get("usageMetadata"))
        token = False
        for cand in d.get("candidates") or []:
            c = as_obj(cand)
            if (c.get("index") or 0) != 0:
                continue
            for part in as_obj(c.get("content")).get("parts") or []:
                token = self._part(as_obj(part)) or token
            if c.get("finishReason"):
                self.finish = str(c["finishReason"])
                self.complete = True
        feedback = as_obj(d.get("promptFeedback"))
        if feedback.get("blockReason"):  # the prompt was refused: no candidate will come
            self.finish = str(feedback["blockReason"])
            self.complete = True
        return token

    def _part(self, part: Obj) -> bool:
        if not part:
            return False
        last = self.parts[-1] if self.parts else None
        text = part.get("text")
        if isinstance(text, str) and set(part) <= {"text", "thought", "thoughtSignature"}:
            thought = bool(part.get("thought"))
            if (
                last is not None
                and isinstance(last.get("text"), str)
                and bool(last.get("thought")) == thought
                and "thoughtSignature" not in last
            ):
                last["text"] += text
                if "thoughtSignature" in part:
                    last["thoughtSignature"] = part["thoughtSignature"]
            else:
                self.parts.append(dict(part))
            return bool(text)
        self.parts.append(dict(part))
        return "functionCall" in part or "executableCode" in part

    def body(self, obj: JSON) -> None:
        if isinstance(obj, list):  # a non-SSE streamGenerateContent answer: a JSON array
            for item in obj:
                if isinstance(item, dict):
                    self._chunk(item)
            self.complete = True
            return
        d = as_obj(obj)
        if "error" in d:
            self.error = error_text(d)
            return
        self._chunk(d)
        self.complete = True

    def result(self) -> Assembled:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[JSON] = []
        for part in self.parts:
            if isinstance(part.get("text"), str):
                (thoughts if part.get("thought") else texts).append(part["text"])
            fc = part.get("functionCall")
            if isinstance(fc, dict):
                calls.append(
                    {
                        "id": fc.get("id"),
                        "name": fc.get("name"),
                        "arguments": _dumps(fc.get("args")),
                    }
                )
        message = {"role": "model", "parts": self.parts} if self.parts else None
        return self._assembled(
            response=Response(
                text="".join(texts) if texts else None,
                reasoning="".join(thoughts) if thoughts else None,
                tool_calls=tuple(calls),
                stop_reason=self.finish,
                message=message,
            ),
            usage=usage_from(Api.GEMINI, self.usage_raw),
        )


def _dumps(value: Any) -> str:
    return orjson.dumps(value if value is not None else {}).decode()
