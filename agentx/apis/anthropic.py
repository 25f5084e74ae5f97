"""Anthropic Messages (``/v1/messages``): ``message_start`` ... ``message_stop`` events."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from agentx.apis.assemble import (
    Assembled,
    AssemblerBase,
    Obj,
    as_obj,
    error_text,
    join,
    loads_obj,
)
from agentx.apis.names import Api
from agentx.apis.sse import SSEEvent
from agentx.apis.usage import as_int, merge_usage, usage_from
from agentx.core.models import JSON, Response


class AnthropicAssembler(AssemblerBase):
    """``message_start`` ... ``message_stop``; usage ``input_tokens`` excludes cache reads/writes."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: dict[int, Obj] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.usage_raw: Obj = {}
        self.stop_reason: str | None = None

    def event(self, ev: SSEEvent) -> bool:
        d = loads_obj(ev.data)
        if d is None:
            return False
        t = d.get("type") or ev.event
        if t == "message_start":
            m = as_obj(d.get("message"))
            self.id = m.get("id") or self.id
            self.model = m.get("model") or self.model
            self._usage(m.get("usage"))
            for i, b in enumerate(m.get("content") or []):
                if isinstance(b, dict):
                    self.blocks[i] = dict(b)
        elif t == "content_block_start":
            idx = as_int(d.get("index"))
            i = len(self.blocks) if idx is None else idx
            block = dict(as_obj(d.get("content_block")))
            self.blocks[i] = block
            return bool(block.get("text") or block.get("thinking"))
        elif t == "content_block_delta":
            return self._delta(as_int(d.get("index")) or 0, as_obj(d.get("delta")))
        elif t == "content_block_stop":
            self._finish_block(as_int(d.get("index")) or 0)
        elif t == "message_delta":
            self.stop_reason = as_obj(d.get("delta")).get("stop_reason") or self.stop_reason
            self._usage(d.get("usage"))
        elif t == "message_stop":
            self.complete = True
        elif t == "error":
            self.error = error_text(d)
        return False

    def _delta(self, i: int, delta: Obj) -> bool:
        b = self.blocks.setdefault(i, {})
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text") or "")
            b["text"] = str(b.get("text") or "") + piece
            return bool(piece)
        if kind == "input_json_delta":
            piece = str(delta.get("partial_json") or "")
            self.partial_json.setdefault(i, []).append(piece)
            return bool(piece)
        if kind == "thinking_delta":
            piece = str(delta.get("thinking") or "")
            b["thinking"] = str(b.get("thinking") or "") + piece
            return bool(piece)
        if kind == "signature_delta":
            b["signature"] = str(b.get("signature") or "") + str(delta.get("signature") or "")
        elif kind == "citations_delta":
            b.setdefault("citations", []).append(delta.get("citation"))
        return False

    def _finish_block(self, i: int) -> None:
        parts = self.partial_json.get(i)
        if parts is None or i not in self.blocks:
            return
        raw = "".join(parts)
        if not raw:
            return
        with contextlib.suppress(orjson.JSONDecodeError):
            self.blocks[i]["input"] = orjson.loads(raw)

    def _usage(self, u: Any) -> None:
        merge_usage(self.usage_raw, u)

    def body(self, obj: JSON) -> None:
        d = as_obj(obj)
        if d.get("type") == "error" or "error" in d:
            self.error = error_text(d)
            return
        self.id = d.get("id")
        self.model = d.get("model")
        self.stop_reason = d.get("stop_reason")
        self._usage(d.get("usage"))
        for i, b in enumerate(d.get("content") or []):
            if isinstance(b, dict):
                self.blocks[i] = dict(b)
        self.complete = True

    def result(self) -> Assembled:
        for i in list(self.partial_json):
            self._finish_block(i)
        content = [self.blocks[i] for i in sorted(self.blocks)]
        texts = [str(b.get("text") or "") for b in content if b.get("type") == "text"]
        thoughts = [str(b.get("thinking") or "") for b in content if b.get("type") == "thinking"]
        calls: list[JSON] = []
        for i in sorted(self.blocks):
            b = self.blocks[i]
            if b.get("type") in ("tool_use", "server_tool_use"):
                parts = self.partial_json.get(i)
                args = "".join(parts) if parts else orjson.dumps(b.get("input") or {}).decode()
                calls.append({"id": b.get("id"), "name": b.get("name"), "arguments": args})
        message = {"role": "assistant", "content": content} if content else None
        return self._assembled(
            response=Response(
                text=join(texts),
                reasoning=join(thoughts),
                tool_calls=tuple(calls),
                stop_reason=self.stop_reason,
                message=message,
            ),
            usage=usage_from(Api.ANTHROPIC_MESSAGES, self.usage_raw),
        )
