"""OpenAI Chat Completions (``/v1/chat/completions``): chunks, ``tool_calls`` deltas, ``[DONE]``."""

from __future__ import annotations

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
from agentx.apis.usage import as_int, usage_from
from agentx.core.models import JSON, Response


class ChatAssembler(AssemblerBase):
    """``data: {chunk}`` ... ``data: [DONE]``; ``tool_calls`` deltas; the trailing usage chunk."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, Obj] = {}
        self.finish: str | None = None
        self.usage_raw: Obj = {}
        self.timings_raw: Obj | None = None  # llama.cpp reports its prompt cache here
        self.refusal: str | None = None

    def event(self, ev: SSEEvent) -> bool:
        if ev.data.strip() == "[DONE]":
            self.complete = True
            return False
        d = loads_obj(ev.data)
        if d is None:
            return False
        if "error" in d:
            self.error = error_text(d)
            return False
        self.id = d.get("id") or self.id
        self.model = d.get("model") or self.model
        if isinstance(d.get("usage"), dict):
            self.usage_raw = d["usage"]
        if isinstance(d.get("timings"), dict):
            self.timings_raw = d["timings"]
        token = False
        for ch in d.get("choices") or []:
            if not isinstance(ch, dict) or (as_int(ch.get("index")) or 0) != 0:
                continue
            delta = as_obj(ch.get("delta"))
            if c := delta.get("content"):
                self.text.append(str(c))
                token = True
            if r := delta.get("reasoning_content") or delta.get("reasoning"):
                self.reasoning.append(str(r))
                token = True
            for tc in delta.get("tool_calls") or []:
                token = self._tool_delta(as_obj(tc)) or token
            if ch.get("finish_reason"):
                self.finish = ch["finish_reason"]
        return token

    def _tool_delta(self, tc: Obj) -> bool:
        idx = as_int(tc.get("index")) or 0
        slot = self.calls.setdefault(
            idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if tc.get("id"):
            slot["id"] = tc["id"]
        if tc.get("type"):
            slot["type"] = tc["type"]
        fn = as_obj(tc.get("function"))
        name, args = fn.get("name") or "", fn.get("arguments") or ""
        slot["function"]["name"] += name
        slot["function"]["arguments"] += args
        return bool(name or args)

    def body(self, obj: JSON) -> None:
        d = as_obj(obj)
        if "error" in d:
            self.error = error_text(d)
            return
        self.id = d.get("id")
        self.model = d.get("model")
        self.usage_raw = as_obj(d.get("usage"))
        if isinstance(d.get("timings"), dict):
            self.timings_raw = d["timings"]
        choices = [c for c in d.get("choices") or [] if isinstance(c, dict)]
        if choices:
            msg = as_obj(choices[0].get("message"))
            if msg.get("content"):
                self.text.append(str(msg["content"]))
            if r := msg.get("reasoning_content") or msg.get("reasoning"):
                self.reasoning.append(str(r))
            for i, tc in enumerate(msg.get("tool_calls") or []):
                self.calls[i] = dict(as_obj(tc))
            self.refusal = msg.get("refusal")
            self.finish = choices[0].get("finish_reason")
        self.complete = True

    def result(self) -> Assembled:
        calls = [self.calls[i] for i in sorted(self.calls)]
        text = join(self.text)
        message: Obj | None = None
        if text is not None or calls:
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = calls
        return self._assembled(
            response=Response(
                text=text,
                reasoning=join(self.reasoning),
                tool_calls=tuple(
                    {
                        "id": c.get("id"),
                        "name": as_obj(c.get("function")).get("name"),
                        "arguments": as_obj(c.get("function")).get("arguments"),
                    }
                    for c in calls
                ),
                stop_reason=self.finish,
                message=message,
            ),
            usage=usage_from(Api.OPENAI_CHAT, self.usage_raw, self.timings_raw),
        )
