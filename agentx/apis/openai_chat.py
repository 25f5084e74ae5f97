"""OpenAI Chat Completions (``/v1/chat/completions``), the shape every OpenAI-compatible server
(vLLM, SGLang, llama.cpp, TRT-LLM, Dynamo, ...) speaks: everything agentx knows of it.

Sections, in order:

- usage: ``chat_usage`` (the OpenAI-compatible names, llama.cpp's ``timings``);
- capture: ``ChatAssembler`` (chunks, ``tool_calls`` deltas, ``[DONE]``);
- replay: ``ChatStreamParser`` (the hot path of a replay), the native request's keys,
  ``asked_tokens``;
- translation to chat: kept as it is, normalised;
- serve-sim: ``parse_chat``, the tools offered and the tool choice (Anthropic's and Responses'
  spellings too), ``OpenAIChatEmitter``, ``openai_error``, the context-length error;
- scrub: tool calls paired with ``tool`` messages by id;
- the :class:`~agentx.apis.family.Family`.

The OpenAI Responses and Anthropic families share the length keys, the tool choice and (the
Responses API) the error shape. One module holds the whole family, stage by stage, so that a change to the family is one
file; cohesion wins over size here (the shared bases are the sibling modules).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import repeat
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
from agentx.apis.emit import SSE_CONTENT_TYPE, Emitter, Pieces, UsageCounts, dumps
from agentx.apis.family import EMPTY, Family, ToolPairs, no_model_in_path
from agentx.apis.fastpath import PLAIN, learn, slot_text
from agentx.apis.names import Api
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
    SHAPE_ERRORS,
    StreamParser,
    StreamProtocolError,
    server_error_text,
    shape_error,
)
from agentx.apis.usage_counts import (
    Raw,
    UsageCheck,
    as_int,
    cached_count,
    checked,
    first_count,
)
from agentx.core.models import JSON, Response, Usage

PATH = "/v1/chat/completions"
CONTENT_PATH = ("choices", 0, "delta", "content")  # the slot of a content delta
LEARN_TRIES = 4  # slots a stream may learn (a shape that changes): then it decodes in full


# -- usage -------------------------------------------------------------------------------------


def chat_usage(raw: Raw, timings: Raw | None, check: UsageCheck) -> Usage:
    cached = cached_count(raw, check)
    if cached is None and timings is not None:
        cached = check.count(timings, "cache_n", "timings.")  # llama.cpp: prompt cache reuse
    return Usage(
        prompt_tokens=first_count(raw, check, "prompt_tokens", "input_tokens"),
        cached_tokens=cached,
        completion_tokens=first_count(raw, check, "completion_tokens", "output_tokens"),
        reasoning_tokens=check.details(raw, "completion_tokens_details", "reasoning_tokens")
        if "completion_tokens_details" in raw
        else check.details(raw, "output_tokens_details", "reasoning_tokens"),
    )


# -- capture: the response assembled -----------------------------------------------------------


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
            usage=checked(chat_usage, self.usage_raw, self.timings_raw)[0],
        )


# -- replay: the stream parser and the native request ------------------------------------------


class ChatStreamParser(StreamParser):
    """OpenAI ``/v1/chat/completions`` (vLLM, SGLang, llama.cpp, TRT-LLM, Dynamo, ...).

    The hottest loop of a replay. A server sends one chunk per token, identical but for the
    delta's text: the first content delta decoded in full teaches the stream its
    :class:`~agentx.apis.fastpath.Slot` (:mod:`agentx.apis.fastpath`), and every later event that
    is the same bytes with another string in that slot counts as a content token with two byte
    comparisons and one scan, no decode. Anything else (role, finish, usage, tool calls,
    reasoning, errors, another shape) is decoded in full: specialised (locals, one dict lookup
    per field) for the one-line ``data: {...}`` event, the generic path for the rest.
    """

    __slots__ = ("_head", "_learn", "_tail")
    api = Api.OPENAI_CHAT

    def __init__(self, live: bool = False, *, fast: bool = True) -> None:
        super().__init__(live)
        self._head: bytes | None = None  # the learnt slot: None until one is proven
        self._tail = b""
        self._learn = LEARN_TRIES if fast else 0  # content deltas left to learn a slot from

    def feed(self, data: bytes, t_ns: int) -> None:
        events = self._split(data)
        if events:
            self._events(events, t_ns)

    def _events(self, events: list[bytes], t_ns: int) -> None:
        loads = orjson.loads
        first = self.first_token_ns
        last = self.last_token_ns
        count = self.token_chunks
        itl = self.itl_ns
        live = self.live
        head = self._head
        tail = self._tail
        skip, cut = len(head or b""), len(tail)
        slotted = 0  # the slot's events not yet in itl: they share this read's instant
        event = b""
        try:
            for event in events:
                if head is not None and event.startswith(head) and event.endswith(tail):
                    body = event[skip:-cut]  # empty when head and tail overlap
                    if body and (not body.translate(None, PLAIN) or slot_text(body) is not None):
                        slotted += 1
                        if live:
                            self.text_parts.append(slot_text(body) or "")
                        continue
                if slotted:  # a slot is learnt after the first token: each event is one gap
                    itl.append(t_ns - last)
                    itl.extend(repeat(0, slotted - 1))
                    last = t_ns
                    count += slotted
                    slotted = 0
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
                plain = False  # a content delta and nothing else: what a slot is learnt from
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
                            calls = None
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
                                itl.append(t_ns - last)
                            last = t_ns
                            count += 1
                            if content and self.first_content_ns is None:
                                self.first_content_ns = t_ns
                            if live:
                                self._accumulate(delta)
                            plain = bool(content) and not (
                                delta.get("tool_calls")
                                or delta.get("reasoning_content")
                                or delta.get("reasoning")
                            )
                    reason = choice.get("finish_reason")
                    if reason is not None:
                        if type(reason) is not str:
                            raise TypeError(f"finish_reason is {type(reason).__name__}")
                        if reason:
                            self.finish_reason = reason
                            plain = False
                if obj.get("usage") or "timings" in obj:
                    self._usage(obj)
                elif plain and self._learn and type(choices) is list:  # a new shape: relearn
                    self._learn -= 1
                    slot = learn(event, 6, obj, CONTENT_PATH)
                    if slot is not None:
                        head, tail = self._head, self._tail = slot.head, slot.tail
                        skip, cut = len(head), len(tail)
        except SHAPE_ERRORS as exc:
            raise shape_error(exc, event) from None
        finally:
            if slotted:
                itl.append(t_ns - last)
                itl.extend(repeat(0, slotted - 1))
                last = t_ns
                count += slotted
            self.last_token_ns = last
            self.token_chunks = count

    def _check(self, obj: Any) -> None:
        if type(obj) is not dict:
            raise StreamProtocolError(f"SSE data is not a JSON object: {str(obj)[:80]!r}")
        if obj.get("error") or obj.get("type") == "error":
            raise StreamProtocolError(
                f"server error event: {server_error_text(obj.get('error') or obj)}"
            )

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
            self._set(*checked(chat_usage, usage, timings))
        elif isinstance(timings, dict) and self.cached_tokens is None:
            self.cached_tokens = checked(chat_usage, None, timings)[0].cached_tokens

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


def asked_tokens(body: dict[str, Any], max_tokens: int) -> int | None:
    """The output length an OpenAI-compatible body asks for (any of the families' length
    keys), after ``--extra-body`` (which may override the ``max_tokens`` agentx set)."""
    for key in ("max_completion_tokens", "max_output_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def replay_body(body: dict[str, Any], model: str, max_tokens: int) -> str:
    body["model"] = model
    if "max_completion_tokens" in body:
        body["max_completion_tokens"] = max_tokens
        body.pop("max_tokens", None)
    else:
        body["max_tokens"] = max_tokens
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return PATH


# -- translation to OpenAI chat ----------------------------------------------------------------


def chat_message(m: JSON) -> list[Message]:
    if not isinstance(m, dict):
        return [{"role": "user", "content": text_of(m)}]
    role = m.get("role") or "user"
    if role == "developer":
        role = "system"
    out: Message = {"role": role, "content": text_of(m.get("content"))}
    if role == "assistant" and m.get("tool_calls"):
        calls = []
        for i, call in enumerate(m["tool_calls"]):
            fn = call.get("function") or {}
            calls.append(
                tool_call(call.get("id") or f"call_{i}", fn.get("name", ""), fn.get("arguments"))
            )
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = m.get("tool_call_id") or ""
    elif role == "function" and m.get("name"):
        out["name"] = m["name"]
    return [out]


def chat_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type", "function") == "function":
            fn = tool.get("function") or tool
            out.append(function_tool(fn.get("name"), fn.get("description"), fn.get("parameters")))
    return out


# -- serve-sim: the request, the answer, the errors --------------------------------------------

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def parse_chat(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/chat/completions``."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages: field required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty array", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _CHAT_ROLES:
            raise RequestError(
                f"messages[{i}] must be an object with a role in {sorted(_CHAT_ROLES)}",
                param=f"messages.[{i}].role",
            )
    n = int_field(body, "n", 1)
    if n is not None and n != 1:
        raise RequestError("n > 1 is not supported by agentx serve-sim", param="n")
    max_tokens = int_field(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = int_field(body, "max_tokens", 1)
    min_tokens = int_field(body, "min_tokens", 0) or 0
    if max_tokens is not None and min_tokens > max_tokens:
        raise RequestError(
            f"min_tokens ({min_tokens}) must be <= max_tokens ({max_tokens})", param="min_tokens"
        )
    stream = bool_field(body, "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestError("stream_options must be an object", param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    return SimRequest(
        api=Api.OPENAI_CHAT,
        body=body,
        model=model_field(body, default_model),
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=bool_field(body, "ignore_eos"),
    )


def offered_tools(body: dict[str, JSON]) -> list[tuple[str, JSON]]:
    """``(name, JSON schema)`` of each function tool the request offers, in order: OpenAI chat's
    ``function`` tools, and tools named at the top level as Anthropic names them (custom and
    server tools)."""
    specs: list[tuple[str, JSON]] = []
    tools = body.get("tools")
    if not isinstance(tools, list):
        return specs
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):  # OpenAI chat
            specs.append((fn["name"], fn.get("parameters")))
        elif isinstance(tool.get("name"), str):  # Anthropic (custom and server tools)
            specs.append((tool["name"], tool.get("input_schema")))
    return specs


def tool_choice(body: dict[str, JSON]) -> tuple[JSON, str | None]:
    """``(kind, named tool)`` of ``tool_choice``: kind ``"none"``, ``"required"``/``"any"``, or
    anything else for auto; OpenAI chat's, Anthropic's and Responses' spellings."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return choice, None
    kind = choice.get("type")
    fn = choice.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):  # OpenAI chat
        return kind, fn["name"]
    if kind in ("tool", "function") and isinstance(choice.get("name"), str):  # Anthropic, Responses
        return kind, choice["name"]
    return kind, None


def no_tool_results(last: dict[str, JSON]) -> bool:
    """A user turn of this family never carries tool results (they are turns of their own)."""
    return False


def parse_request(body: dict[str, JSON], served_model: str, route: Route) -> SimRequest:
    return parse_chat(body, served_model)


_OPENAI_FINISH = {"stop": "stop", "length": "length", "tool": "tool_calls"}


class OpenAIChatEmitter:
    content_type = SSE_CONTENT_TYPE
    terminator: bytes | None = b"data: [DONE]"

    def __init__(
        self,
        request_id: str,
        created: int,
        model: str,
        plan: OutputPlan,
        seed: int,
        include_usage: bool,
    ) -> None:
        self.request_id = request_id
        self.created = created
        self.model = model
        self.plan = plan
        self.include_usage = include_usage
        self._pieces = Pieces(plan, seed)
        head = (
            b'data: {"id":"' + request_id.encode() + b'","object":"chat.completion.chunk",'
            b'"created":' + str(created).encode() + b',"model":' + dumps(model) + b","
        )
        self._head = head
        if plan.tool_call is None:
            self._pre = head + b'"choices":[{"index":0,"delta":{"content":"'
            self._post = b'"},"logprobs":null,"finish_reason":null}]}\n\n'
        else:
            self._pre = (
                head
                + b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"'
            )
            self._post = b'"}}]},"logprobs":null,"finish_reason":null}]}\n\n'

    def _chunk(self, choices: JSON, usage: JSON = None, with_usage: bool = False) -> bytes:
        tail: dict[str, JSON] = {"choices": choices}
        if with_usage:
            tail["usage"] = usage
        return self._head + dumps(tail)[1:] + b"\n\n"

    def opening(self, usage: UsageCounts) -> bytes:
        delta: dict[str, JSON] = {"role": "assistant", "content": ""}
        tc = self.plan.tool_call
        if tc is not None:
            delta = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": tc.call_id,
                        "type": "function",
                        "function": {"name": tc.name, "arguments": ""},
                    }
                ],
            }
        return self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}])

    def token(self, i: int) -> bytes:
        return self._pieces.framed(self._pre, self._post, i, i + 1)

    def tokens(self, start: int, stop: int) -> bytes:
        return self._pieces.framed(self._pre, self._post, start, stop)

    def closing(self, usage: UsageCounts) -> bytes:
        finish = _OPENAI_FINISH[self.plan.finish]
        out = self._chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}])
        if self.include_usage:
            out += self._chunk([], openai_usage_body(usage), with_usage=True)
        return out + b"data: [DONE]\n\n"

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        tc = self.plan.tool_call
        message: dict[str, JSON] = {"role": "assistant", "content": self._pieces.text()}
        if tc is not None:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": tc.call_id,
                        "type": "function",
                        "function": {"name": tc.name, "arguments": tc.arguments},
                    }
                ],
            }
        return {
            "id": self.request_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _OPENAI_FINISH[self.plan.finish],
                }
            ],
            "usage": openai_usage_body(usage),
        }


def openai_usage_body(u: UsageCounts) -> dict[str, JSON]:
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    }


def make_emitter(
    next_id: Callable[[str], str], sreq: SimRequest, plan: OutputPlan, seed: int, sse: bool
) -> tuple[str, Emitter]:
    rid = next_id("chatcmpl-")
    created = int(time.time())
    return rid, OpenAIChatEmitter(rid, created, sreq.model, plan, seed, sreq.include_usage)


_OPENAI_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
}


def openai_error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> dict[str, JSON]:
    kind = _OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_body(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    kind: str | None = None,
) -> dict[str, JSON]:
    return openai_error(status, message, param, code)


def context_error(
    prompt_tokens: int, max_tokens: int | None, limit: int, param: str = "messages"
) -> RequestError:
    """vLLM's context-length error (``param``: the body key of the conversation)."""
    wanted = prompt_tokens + (max_tokens or 0)
    if max_tokens is None:
        message = (
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
        )
    else:
        message = (
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{wanted} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
            "completion). Please reduce the length of the messages or completion."
        )
    return RequestError(message, param=param, code="context_length_exceeded")


# -- scrub: tool calls paired with their results --------------------------------------------


def tool_ids(msg: dict[str, JSON]) -> tuple[list[str], list[str]]:
    """(call ids, result ids): an assistant's ``tool_calls``, a ``tool`` message's id."""
    calls: list[str] = []
    results: list[str] = []
    if msg.get("role") == "assistant" and isinstance(msg.get("tool_calls"), list):
        calls.extend(
            c["id"]
            for c in msg["tool_calls"]
            if isinstance(c, dict) and isinstance(c.get("id"), str)
        )
    if msg.get("role") == "tool" and isinstance(msg.get("tool_call_id"), str):
        results.append(msg["tool_call_id"])
    return calls, results


def strip_orphans(msg: dict[str, JSON], orphan_ids: set[str], unanswered: set[str]) -> JSON:
    if msg.get("role") == "tool" and msg.get("tool_call_id") in orphan_ids:
        return EMPTY
    calls = msg.get("tool_calls")
    if msg.get("role") == "assistant" and isinstance(calls, list):
        kept = [c for c in calls if not (isinstance(c, dict) and c.get("id") in unanswered)]
        if len(kept) != len(calls):
            new = dict(msg)
            if kept:
                new["tool_calls"] = kept
            else:
                del new["tool_calls"]
                if not new.get("content"):
                    return EMPTY
            return new
    return msg


def drop_emptied(msg: dict[str, JSON]) -> bool:
    """A whole ``tool`` message may go; anything else emptied is ambiguous."""
    return msg.get("role") == "tool"


# -- the family --------------------------------------------------------------------------------


def _speaks(path: str) -> bool:
    return path.endswith("/chat/completions")


FAMILY = Family(
    api=Api.OPENAI_CHAT,
    conversation_key="messages",
    system_key="system",  # unused: the system prompt is a message
    speaks=_speaks,
    model_from_path=no_model_in_path,
    serve_path=PATH,
    error_prefix=PATH,
    usage=chat_usage,
    assembler=ChatAssembler,
    stream_parser=ChatStreamParser,
    replay_body=replay_body,
    asked_tokens=asked_tokens,
    chat_messages=chat_message,
    chat_tools=chat_tools,
    system_text=None,
    merge_messages=None,
    route=fixed_route,
    parse_request=parse_request,
    emitter=make_emitter,
    error_body=error_body,
    context_error=context_error,
    offered_tools=offered_tools,
    tool_choice=tool_choice,
    answers_tool_results=no_tool_results,
    call_id_prefix="call_",
    tool_pairs=ToolPairs(tool_ids, strip_orphans, drop_emptied),
)
