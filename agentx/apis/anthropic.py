"""Anthropic Messages (``/v1/messages``): everything agentx knows of it.

Sections, in order:

- usage: ``anthropic_usage`` (``input_tokens`` excludes cache reads and writes);
- capture: ``AnthropicAssembler`` (``message_start`` ... ``message_stop`` events);
- replay: ``MessagesStreamParser``, the native request's keys;
- translation to chat: tool_use blocks become tool calls, tool_result blocks tool messages;
- serve-sim: ``parse_messages``, whether a user turn carries tool results,
  ``AnthropicEmitter``, ``anthropic_error``, the context-length error (the tools offered and
  the tool choice are read as OpenAI chat reads them);
- scrub: ``tool_use`` blocks paired with ``tool_result`` blocks by id, turns alternating;
- the :class:`~agentx.apis.family.Family`.

One module holds the whole family, stage by stage, so that a change to the family is one
file; cohesion wins over size here (the shared bases are the sibling modules).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import orjson

from agentx.apis.answer import OutputPlan
from agentx.apis.assemble import (
    Assembled,
    AssemblerBase,
    Obj,
    as_obj,
    error_text,
    join,
    loads_obj,
)
from agentx.apis.chat_parts import Message, function_tool, text_of, tool_call
from agentx.apis.emit import SSE_CONTENT_TYPE, Emitter, Pieces, UsageCounts, sse_event
from agentx.apis.family import EMPTY, Family, ToolPairs, no_model_in_path
from agentx.apis.names import Api
from agentx.apis.openai_chat import asked_tokens, offered_tools, tool_choice
from agentx.apis.serving import (
    RequestError,
    Route,
    SimRequest,
    bool_field,
    fixed_route,
    int_field,
    model_field,
)
from agentx.apis.sse import SSEEvent
from agentx.apis.stream import (
    StreamParser,
    StreamProtocolError,
)
from agentx.apis.usage_counts import (
    Raw,
    UsageCheck,
    as_int,
    checked,
    merge_usage,
)
from agentx.core.models import JSON, Response, Usage

PATH = "/v1/messages"


# -- usage -------------------------------------------------------------------------------------


def anthropic_usage(raw: Raw, timings: Raw | None, check: UsageCheck) -> Usage:
    before = len(check.problems)
    uncached = check.count(raw, "input_tokens")
    read = check.count(raw, "cache_read_input_tokens")
    created = check.count(raw, "cache_creation_input_tokens")
    known = len(check.problems) == before  # an impossible part makes the total unknown
    return Usage(
        prompt_tokens=None
        if uncached is None or not known
        else uncached + (read or 0) + (created or 0),
        cached_tokens=read,
        cache_creation_tokens=created,
        completion_tokens=check.count(raw, "output_tokens"),
    )


# -- capture: the response assembled -----------------------------------------------------------


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
            usage=checked(anthropic_usage, self.usage_raw)[0],
        )


# -- replay: the stream parser and the native request ------------------------------------------


class MessagesStreamParser(StreamParser):
    """Anthropic ``/v1/messages``. Prompt total = input + cache reads + cache writes."""

    __slots__ = ("_usage_raw",)
    api = Api.ANTHROPIC_MESSAGES

    def __init__(self, live: bool = False) -> None:
        super().__init__(live)
        self._usage_raw: dict[str, Any] = {}  # message_start's usage, updated by message_delta's

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):  # named by checked_usage: "usage is not an object"
            self._set(*checked(anthropic_usage, usage))
            return
        merge_usage(self._usage_raw, usage)
        self._set(*checked(anthropic_usage, self._usage_raw))

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


def replay_body(body: dict[str, Any], model: str, max_tokens: int) -> str:
    body["model"] = model
    body["max_tokens"] = max_tokens
    body["stream"] = True
    return PATH


# -- translation to OpenAI chat ----------------------------------------------------------------


def anthropic_message(m: JSON) -> list[Message]:
    if not isinstance(m, dict):
        return [{"role": "user", "content": text_of(m)}]
    role = m.get("role") or "user"
    content = m.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": text_of(content)}]
    if role == "assistant":
        texts: list[JSON] = []
        calls = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.append(
                    tool_call(block.get("id", ""), block.get("name", ""), block.get("input"))
                )
            else:
                texts.append(block)
        out: Message = {"role": "assistant", "content": text_of(texts)}
        if calls:
            out["tool_calls"] = calls
        return [out]
    messages: list[Message] = []
    rest: list[JSON] = []
    for block in content:  # tool results first: they must follow the assistant's tool calls
        if isinstance(block, dict) and block.get("type") == "tool_result":
            messages.append(
                {
                    "role": "tool",
                    "content": text_of(block.get("content")),
                    "tool_call_id": block.get("tool_use_id", ""),
                }
            )
        else:
            rest.append(block)
    if rest or not messages:
        messages.append({"role": role, "content": text_of(rest)})
    return messages


def anthropic_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and "input_schema" in tool:  # server tools have no schema
            out.append(
                function_tool(tool.get("name"), tool.get("description"), tool["input_schema"])
            )
    return out


# -- serve-sim: the request, the answer, the errors --------------------------------------------

_ANTHROPIC_ROLES = frozenset({"user", "assistant"})


def parse_messages(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/messages`` (Anthropic). ``max_tokens`` is required, as Anthropic requires it."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages: Field required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: must be a non-empty list", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ANTHROPIC_ROLES:
            raise RequestError(
                f"messages.{i}.role: Input should be 'user' or 'assistant'", param="messages"
            )
    max_tokens = int_field(body, "max_tokens", 1)
    if max_tokens is None:
        raise RequestError("max_tokens: Field required", param="max_tokens")
    min_tokens = int_field(body, "min_tokens", 0) or 0
    return SimRequest(
        api=Api.ANTHROPIC_MESSAGES,
        body=body,
        model=model_field(body, default_model),
        stream=bool_field(body, "stream"),
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min(min_tokens, max_tokens),
        ignore_eos=bool_field(body, "ignore_eos"),
    )


def answers_tool_results(last: dict[str, JSON]) -> bool:
    """Whether the last user turn carries ``tool_result`` blocks."""
    content = last.get("content")
    if isinstance(content, list):
        kinds = {b.get("type") for b in content if isinstance(b, dict)}
        return "tool_result" in kinds
    return False


def parse_request(body: dict[str, JSON], served_model: str, route: Route) -> SimRequest:
    return parse_messages(body, served_model)


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"}


def anthropic_usage_body(u: UsageCounts, output_tokens: int) -> dict[str, JSON]:
    return {
        "input_tokens": u.prompt_tokens - u.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached_tokens,
        "output_tokens": output_tokens,
    }


class AnthropicEmitter:
    content_type = SSE_CONTENT_TYPE
    terminator: bytes | None = b"event: message_stop"

    def __init__(self, message_id: str, model: str, plan: OutputPlan, seed: int) -> None:
        self.message_id = message_id
        self.model = model
        self.plan = plan
        self._pieces = Pieces(plan, seed)
        if plan.tool_call is None:
            self._pre = (
                b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                b'"delta":{"type":"text_delta","text":"'
            )
        else:
            self._pre = (
                b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                b'"delta":{"type":"input_json_delta","partial_json":"'
            )
        self._post = b'"}}\n\n'

    def _message(self, content: list[JSON], stop: str | None, usage: JSON) -> dict[str, JSON]:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def opening(self, usage: UsageCounts) -> bytes:
        tc = self.plan.tool_call
        block: dict[str, JSON] = {"type": "text", "text": ""}
        if tc is not None:
            block = {"type": "tool_use", "id": tc.call_id, "name": tc.name, "input": {}}
        start = self._message([], None, anthropic_usage_body(usage, 1))
        return (
            sse_event("message_start", {"type": "message_start", "message": start})
            + sse_event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
            + sse_event("ping", {"type": "ping"})
        )

    def token(self, i: int) -> bytes:
        return self._pieces.framed(self._pre, self._post, i, i + 1)

    def tokens(self, start: int, stop: int) -> bytes:
        return self._pieces.framed(self._pre, self._post, start, stop)

    def closing(self, usage: UsageCounts) -> bytes:
        stop = _ANTHROPIC_STOP[self.plan.finish]
        return (
            sse_event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + sse_event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": anthropic_usage_body(usage, usage.completion_tokens),
                },
            )
            + sse_event("message_stop", {"type": "message_stop"})
        )

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        tc = self.plan.tool_call
        if tc is not None:
            content: list[JSON] = [
                {
                    "type": "tool_use",
                    "id": tc.call_id,
                    "name": tc.name,
                    "input": orjson.loads(tc.arguments),
                }
            ]
        else:
            content = [{"type": "text", "text": self._pieces.text()}]
        return self._message(
            content,
            _ANTHROPIC_STOP[self.plan.finish],
            anthropic_usage_body(usage, usage.completion_tokens),
        )


def make_emitter(
    next_id: Callable[[str], str], sreq: SimRequest, plan: OutputPlan, seed: int, sse: bool
) -> tuple[str, Emitter]:
    rid = next_id("msg_")
    return rid, AnthropicEmitter(rid, sreq.model, plan, seed)


_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
}


def anthropic_error(status: int, message: str, kind: str | None = None) -> dict[str, JSON]:
    kind = kind or _ANTHROPIC_TYPES.get(
        status, "invalid_request_error" if status < 500 else "api_error"
    )
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_body(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    kind: str | None = None,
) -> dict[str, JSON]:
    return anthropic_error(status, message, kind)


def context_error(prompt_tokens: int, max_tokens: int | None, limit: int) -> RequestError:
    wanted = prompt_tokens + (max_tokens or 0)
    return RequestError(f"prompt is too long: {wanted} tokens > {limit} maximum", param="messages")


# -- scrub: tool calls paired with their results --------------------------------------------


def tool_ids(msg: dict[str, JSON]) -> tuple[list[str], list[str]]:
    """(call ids, result ids): ``tool_use`` and ``tool_result`` blocks."""
    calls: list[str] = []
    results: list[str] = []
    content = msg.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                calls.append(block["id"])
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                results.append(block["tool_use_id"])
    return calls, results


def strip_orphans(msg: dict[str, JSON], orphan_ids: set[str], unanswered: set[str]) -> JSON:
    content = msg.get("content")
    if not isinstance(content, list):
        return msg
    kept = [
        b
        for b in content
        if not (
            isinstance(b, dict)
            and (
                (b.get("type") == "tool_result" and b.get("tool_use_id") in orphan_ids)
                or (b.get("type") == "tool_use" and b.get("id") in unanswered)
            )
        )
    ]
    if len(kept) == len(content):
        return msg
    if not kept:
        return EMPTY
    return {**msg, "content": kept}


def never_dropped(msg: dict[str, JSON]) -> bool:
    """An emptied turn would restructure the conversation."""
    return False


# -- the family --------------------------------------------------------------------------------


def _speaks(path: str) -> bool:
    return path.endswith("/messages") and not path.endswith("/batches/messages")


FAMILY = Family(
    api=Api.ANTHROPIC_MESSAGES,
    conversation_key="messages",
    system_key="system",
    speaks=_speaks,
    model_from_path=no_model_in_path,
    serve_path=PATH,
    error_prefix=PATH,
    usage=anthropic_usage,
    assembler=AnthropicAssembler,
    stream_parser=MessagesStreamParser,
    replay_body=replay_body,
    asked_tokens=asked_tokens,
    chat_messages=anthropic_message,
    chat_tools=anthropic_tools,
    system_text=text_of,
    merge_messages=None,
    route=fixed_route,
    parse_request=parse_request,
    emitter=make_emitter,
    error_body=error_body,
    context_error=context_error,
    offered_tools=offered_tools,
    tool_choice=tool_choice,
    answers_tool_results=answers_tool_results,
    call_id_prefix="toolu_",
    tool_pairs=ToolPairs(tool_ids, strip_orphans, never_dropped, alternating=True),
)
