"""OpenAI Responses (``/v1/responses``): ``event:``-typed SSE with no ``[DONE]``."""

from __future__ import annotations

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
from agentx.apis.usage import as_int, usage_from
from agentx.core.models import JSON, Response

_TOKEN_DELTAS = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.function_call_arguments.delta": "arguments",
    "response.custom_tool_call_input.delta": "input",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
}


class ResponsesAssembler(AssemblerBase):
    """``event:``-typed SSE with no ``[DONE]``; ``response.completed`` carries the whole output."""

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[int, Obj] = {}
        self.done: set[int] = set()
        self.acc: dict[tuple[int, str], list[str]] = {}
        self.final: Obj | None = None

    def event(self, ev: SSEEvent) -> bool:
        d = loads_obj(ev.data)
        if d is None:
            return False
        t = str(d.get("type") or ev.event)
        if t in ("response.created", "response.in_progress", "response.queued"):
            r = as_obj(d.get("response"))
            self.id = r.get("id") or self.id
            self.model = r.get("model") or self.model
        elif t in _TOKEN_DELTAS:
            piece = str(d.get("delta") or "")
            self.acc.setdefault((as_int(d.get("output_index")) or 0, _TOKEN_DELTAS[t]), []).append(
                piece
            )
            return bool(piece)
        elif t in ("response.output_item.added", "response.output_item.done"):
            given = as_int(d.get("output_index"))
            pos = len(self.items) if given is None else given
            self.items[pos] = dict(as_obj(d.get("item")))
            if t == "response.output_item.done":
                self.done.add(pos)
        elif t in ("response.completed", "response.incomplete", "response.failed"):
            self.final = as_obj(d.get("response"))
            self.id = self.final.get("id") or self.id
            self.model = self.final.get("model") or self.model
            self.complete = True
            if t == "response.failed":
                self.error = error_text(self.final.get("error")) or "response.failed"
        elif t == "error":
            self.error = error_text(d)
        return False

    def body(self, obj: JSON) -> None:
        d = as_obj(obj)
        if d.get("error") and not d.get("output"):
            self.error = error_text(d["error"])
            return
        self.final = d
        self.id = d.get("id")
        self.model = d.get("model")
        self.complete = True

    def _output(self) -> list[Obj]:
        if self.final is not None and isinstance(self.final.get("output"), list):
            return [dict(as_obj(o)) for o in self.final["output"]]
        out: list[Obj] = []
        for oi in sorted(self.items):
            item = dict(self.items[oi])
            if oi not in self.done:  # an interrupted item: rebuild it from its deltas
                text = self.acc.get((oi, "text"))
                if text is not None and item.get("type") == "message":
                    item["content"] = [{"type": "output_text", "text": "".join(text)}]
                if (args := self.acc.get((oi, "arguments"))) is not None:
                    item["arguments"] = "".join(args)
                if (inp := self.acc.get((oi, "input"))) is not None:
                    item["input"] = "".join(inp)
            out.append(item)
        return out

    def result(self) -> Assembled:
        output = self._output()
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[JSON] = []
        for item in output:
            kind = item.get("type")
            if kind == "message":
                for part in item.get("content") or []:
                    p = as_obj(part)
                    if p.get("type") in ("output_text", "text"):
                        texts.append(str(p.get("text") or ""))
                    elif p.get("type") == "refusal":
                        texts.append(str(p.get("refusal") or ""))
            elif kind == "reasoning":
                for part in (item.get("summary") or []) + (item.get("content") or []):
                    if isinstance(part, dict) and part.get("text"):
                        thoughts.append(str(part["text"]))
            elif kind == "function_call":
                calls.append(
                    {
                        "id": item.get("call_id"),
                        "name": item.get("name"),
                        "arguments": item.get("arguments"),
                    }
                )
            elif kind == "custom_tool_call":
                calls.append(
                    {
                        "id": item.get("call_id"),
                        "name": item.get("name"),
                        "arguments": item.get("input"),
                    }
                )
            elif kind == "local_shell_call":
                calls.append(
                    {
                        "id": item.get("call_id"),
                        "name": "local_shell",
                        "arguments": orjson.dumps(item.get("action")).decode(),
                    }
                )
        if not texts and not self.final:  # a stream cut before any item finished
            for (_oi, kind), parts in sorted(self.acc.items()):
                if kind == "text" and not any(_oi == k for k in self.items):
                    texts.append("".join(parts))
        final = self.final or {}
        stop = final.get("status")
        if stop == "incomplete":
            stop = as_obj(final.get("incomplete_details")).get("reason") or stop
        return self._assembled(
            response=Response(
                text=join(texts),
                reasoning=join(thoughts),
                tool_calls=tuple(calls),
                stop_reason=stop,
                message=output or None,
            ),
            usage=usage_from(Api.OPENAI_RESPONSES, as_obj(final.get("usage"))),
        )
