"""Per-family assembly of a model call: which API a request speaks, and what came back.

Each assembler takes the response either as SSE events (:meth:`event`, which says whether an
event carried generated output, for time to first token) or as one JSON body (:meth:`body`),
and builds the normalised :class:`~agentx.models.Response` and :class:`~agentx.models.Usage`.
Assemblers never raise on odd input: a malformed event is skipped, a missing field is ``None``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from agentx.capture.sse import SSEEvent
from agentx.models import (
    API_ANTHROPIC_MESSAGES,
    API_OPENAI_CHAT,
    API_OPENAI_RESPONSES,
    API_OTHER,
    JSON,
    Response,
    Usage,
)

Obj = dict[str, Any]


def classify(method: str, path: str) -> str:
    """The API family of a request, from its method and path (query ignored)."""
    if method.upper() != "POST":
        return API_OTHER
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/messages") and not p.endswith("/batches/messages"):
        return API_ANTHROPIC_MESSAGES
    if p.endswith("/chat/completions"):
        return API_OPENAI_CHAT
    if p.endswith("/responses") or p.endswith("/responses/compact"):
        return API_OPENAI_RESPONSES
    return API_OTHER


def max_output_tokens(body: JSON) -> int | None:
    if not isinstance(body, dict):
        return None
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        v = body.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


@dataclass(frozen=True, slots=True)
class Assembled:
    response: Response
    usage: Usage
    model: str | None = None
    response_id: str | None = None
    error: str | None = None
    complete: bool = False  # the stream's own end marker (or a whole JSON body) was seen


class Assembler(Protocol):
    def event(self, ev: SSEEvent) -> bool: ...
    def body(self, obj: JSON) -> None: ...
    def result(self) -> Assembled: ...


def make_assembler(api: str) -> Assembler:
    if api == API_ANTHROPIC_MESSAGES:
        return AnthropicAssembler()
    if api == API_OPENAI_CHAT:
        return ChatAssembler()
    if api == API_OPENAI_RESPONSES:
        return ResponsesAssembler()
    raise ValueError(f"no assembler for api {api!r}")


def _loads(data: str) -> Obj | None:
    try:
        v = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return v if isinstance(v, dict) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _obj(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


def error_text(err: Any) -> str | None:
    """One line from the error objects of all three families (or a bare string)."""
    if err is None:
        return None
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        inner = err.get("error", err)
        if isinstance(inner, str):
            return inner
        if isinstance(inner, dict):
            kind = inner.get("type") or inner.get("code")
            msg = inner.get("message")
            if kind and msg:
                return f"{kind}: {msg}"
            if msg or kind:
                return str(msg or kind)
    return orjson.dumps(err).decode()[:500]


def _join(parts: list[str]) -> str | None:
    return "".join(parts) if parts else None


# --------------------------------------------------------------------------- Anthropic Messages


class AnthropicAssembler:
    """``message_start`` ... ``message_stop``; usage ``input_tokens`` excludes cache reads/writes."""

    def __init__(self) -> None:
        self.blocks: dict[int, Obj] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.usage_raw: Obj = {}
        self.model: str | None = None
        self.id: str | None = None
        self.stop_reason: str | None = None
        self.error: str | None = None
        self.complete = False

    def event(self, ev: SSEEvent) -> bool:
        d = _loads(ev.data)
        if d is None:
            return False
        t = d.get("type") or ev.event
        if t == "message_start":
            m = _obj(d.get("message"))
            self.id = m.get("id") or self.id
            self.model = m.get("model") or self.model
            self._usage(m.get("usage"))
            for i, b in enumerate(m.get("content") or []):
                if isinstance(b, dict):
                    self.blocks[i] = dict(b)
        elif t == "content_block_start":
            idx = _int(d.get("index"))
            i = len(self.blocks) if idx is None else idx
            block = dict(_obj(d.get("content_block")))
            self.blocks[i] = block
            return bool(block.get("text") or block.get("thinking"))
        elif t == "content_block_delta":
            return self._delta(_int(d.get("index")) or 0, _obj(d.get("delta")))
        elif t == "content_block_stop":
            self._finish_block(_int(d.get("index")) or 0)
        elif t == "message_delta":
            self.stop_reason = _obj(d.get("delta")).get("stop_reason") or self.stop_reason
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
        for k, v in _obj(u).items():
            if _int(v) is not None:
                self.usage_raw[k] = v

    def body(self, obj: JSON) -> None:
        d = _obj(obj)
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
        u = self.usage_raw
        inp = _int(u.get("input_tokens"))
        created = _int(u.get("cache_creation_input_tokens"))
        read = _int(u.get("cache_read_input_tokens"))
        prompt = None if inp is None else inp + (created or 0) + (read or 0)
        message = {"role": "assistant", "content": content} if content else None
        return Assembled(
            response=Response(
                text=_join(texts),
                reasoning=_join(thoughts),
                tool_calls=tuple(calls),
                stop_reason=self.stop_reason,
                message=message,
            ),
            usage=Usage(
                prompt_tokens=prompt,
                cached_tokens=read,
                cache_creation_tokens=created,
                completion_tokens=_int(u.get("output_tokens")),
            ),
            model=self.model,
            response_id=self.id,
            error=self.error,
            complete=self.complete,
        )


# --------------------------------------------------------------------------- OpenAI Chat


class ChatAssembler:
    """``data: {chunk}`` ... ``data: [DONE]``; ``tool_calls`` deltas; the trailing usage chunk."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, Obj] = {}
        self.finish: str | None = None
        self.usage_raw: Obj = {}
        self.model: str | None = None
        self.id: str | None = None
        self.error: str | None = None
        self.complete = False
        self.refusal: str | None = None

    def event(self, ev: SSEEvent) -> bool:
        if ev.data.strip() == "[DONE]":
            self.complete = True
            return False
        d = _loads(ev.data)
        if d is None:
            return False
        if "error" in d:
            self.error = error_text(d)
            return False
        self.id = d.get("id") or self.id
        self.model = d.get("model") or self.model
        if isinstance(d.get("usage"), dict):
            self.usage_raw = d["usage"]
        token = False
        for ch in d.get("choices") or []:
            if not isinstance(ch, dict) or (_int(ch.get("index")) or 0) != 0:
                continue
            delta = _obj(ch.get("delta"))
            if c := delta.get("content"):
                self.text.append(str(c))
                token = True
            if r := delta.get("reasoning_content") or delta.get("reasoning"):
                self.reasoning.append(str(r))
                token = True
            for tc in delta.get("tool_calls") or []:
                token = self._tool_delta(_obj(tc)) or token
            if ch.get("finish_reason"):
                self.finish = ch["finish_reason"]
        return token

    def _tool_delta(self, tc: Obj) -> bool:
        idx = _int(tc.get("index")) or 0
        slot = self.calls.setdefault(
            idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if tc.get("id"):
            slot["id"] = tc["id"]
        if tc.get("type"):
            slot["type"] = tc["type"]
        fn = _obj(tc.get("function"))
        name, args = fn.get("name") or "", fn.get("arguments") or ""
        slot["function"]["name"] += name
        slot["function"]["arguments"] += args
        return bool(name or args)

    def body(self, obj: JSON) -> None:
        d = _obj(obj)
        if "error" in d:
            self.error = error_text(d)
            return
        self.id = d.get("id")
        self.model = d.get("model")
        self.usage_raw = _obj(d.get("usage"))
        choices = [c for c in d.get("choices") or [] if isinstance(c, dict)]
        if choices:
            msg = _obj(choices[0].get("message"))
            if msg.get("content"):
                self.text.append(str(msg["content"]))
            if r := msg.get("reasoning_content") or msg.get("reasoning"):
                self.reasoning.append(str(r))
            for i, tc in enumerate(msg.get("tool_calls") or []):
                self.calls[i] = dict(_obj(tc))
            self.refusal = msg.get("refusal")
            self.finish = choices[0].get("finish_reason")
        self.complete = True

    def result(self) -> Assembled:
        calls = [self.calls[i] for i in sorted(self.calls)]
        text = _join(self.text)
        message: Obj | None = None
        if text is not None or calls:
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = calls
        u = self.usage_raw
        pdet, cdet = _obj(u.get("prompt_tokens_details")), _obj(u.get("completion_tokens_details"))
        cached = _int(pdet.get("cached_tokens"))
        if cached is None:
            cached = _int(u.get("prompt_cache_hit_tokens"))
        return Assembled(
            response=Response(
                text=text,
                reasoning=_join(self.reasoning),
                tool_calls=tuple(
                    {
                        "id": c.get("id"),
                        "name": _obj(c.get("function")).get("name"),
                        "arguments": _obj(c.get("function")).get("arguments"),
                    }
                    for c in calls
                ),
                stop_reason=self.finish,
                message=message,
            ),
            usage=Usage(
                prompt_tokens=_int(u.get("prompt_tokens")),
                cached_tokens=cached,
                completion_tokens=_int(u.get("completion_tokens")),
                reasoning_tokens=_int(cdet.get("reasoning_tokens")),
            ),
            model=self.model,
            response_id=self.id,
            error=self.error,
            complete=self.complete,
        )


# --------------------------------------------------------------------------- OpenAI Responses

_TOKEN_DELTAS = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.function_call_arguments.delta": "arguments",
    "response.custom_tool_call_input.delta": "input",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
}


class ResponsesAssembler:
    """``event:``-typed SSE with no ``[DONE]``; ``response.completed`` carries the whole output."""

    def __init__(self) -> None:
        self.items: dict[int, Obj] = {}
        self.done: set[int] = set()
        self.acc: dict[tuple[int, str], list[str]] = {}
        self.final: Obj | None = None
        self.model: str | None = None
        self.id: str | None = None
        self.error: str | None = None
        self.complete = False

    def event(self, ev: SSEEvent) -> bool:
        d = _loads(ev.data)
        if d is None:
            return False
        t = str(d.get("type") or ev.event)
        if t in ("response.created", "response.in_progress", "response.queued"):
            r = _obj(d.get("response"))
            self.id = r.get("id") or self.id
            self.model = r.get("model") or self.model
        elif t in _TOKEN_DELTAS:
            piece = str(d.get("delta") or "")
            self.acc.setdefault((_int(d.get("output_index")) or 0, _TOKEN_DELTAS[t]), []).append(
                piece
            )
            return bool(piece)
        elif t in ("response.output_item.added", "response.output_item.done"):
            given = _int(d.get("output_index"))
            pos = len(self.items) if given is None else given
            self.items[pos] = dict(_obj(d.get("item")))
            if t == "response.output_item.done":
                self.done.add(pos)
        elif t in ("response.completed", "response.incomplete", "response.failed"):
            self.final = _obj(d.get("response"))
            self.id = self.final.get("id") or self.id
            self.model = self.final.get("model") or self.model
            self.complete = True
            if t == "response.failed":
                self.error = error_text(self.final.get("error")) or "response.failed"
        elif t == "error":
            self.error = error_text(d)
        return False

    def body(self, obj: JSON) -> None:
        d = _obj(obj)
        if d.get("error") and not d.get("output"):
            self.error = error_text(d["error"])
            return
        self.final = d
        self.id = d.get("id")
        self.model = d.get("model")
        self.complete = True

    def _output(self) -> list[Obj]:
        if self.final is not None and isinstance(self.final.get("output"), list):
            return [dict(_obj(o)) for o in self.final["output"]]
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
                    p = _obj(part)
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
        u = _obj(final.get("usage"))
        stop = final.get("status")
        if stop == "incomplete":
            stop = _obj(final.get("incomplete_details")).get("reason") or stop
        return Assembled(
            response=Response(
                text=_join(texts),
                reasoning=_join(thoughts),
                tool_calls=tuple(calls),
                stop_reason=stop,
                message=output or None,
            ),
            usage=Usage(
                prompt_tokens=_int(u.get("input_tokens")),
                cached_tokens=_int(_obj(u.get("input_tokens_details")).get("cached_tokens")),
                completion_tokens=_int(u.get("output_tokens")),
                reasoning_tokens=_int(_obj(u.get("output_tokens_details")).get("reasoning_tokens")),
            ),
            model=self.model,
            response_id=self.id,
            error=self.error,
            complete=self.complete,
        )
