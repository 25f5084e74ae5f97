"""OpenAI Responses (``/v1/responses``): everything agentx knows of it.

Sections, in order:

- usage: ``responses_usage``;
- capture: ``ResponsesAssembler`` (``event:``-typed SSE with no ``[DONE]``,
  ``response.completed`` carrying the whole output);
- replay: ``ResponsesStreamParser``, the native request's keys;
- translation to chat: items to messages, consecutive assistant items merged;
- serve-sim: ``parse_responses``, the ``function`` tools offered, ``ResponsesEmitter`` (the
  error shape, the tool choice and the context-length error are OpenAI chat's);
- scrub: call items paired with their output items by ``call_id``;
- the :class:`~agentx.apis.family.Family`.

One module holds the whole family, stage by stage, so that a change to the family is one
file; cohesion wins over size here (the shared bases are the sibling modules).

serve-sim's stream is numbered by ``sequence_number`` as OpenAI numbers it::

    response.created, response.in_progress, response.output_item.added,
    response.content_part.added, response.output_text.delta ..., response.output_text.done,
    response.content_part.done, response.output_item.done, response.completed

A tool call is one ``function_call`` output item instead: ``output_item.added``,
``function_call_arguments.delta`` ..., ``function_call_arguments.done``, ``output_item.done``.
The answer's status is ``completed`` even when it stopped at ``max_output_tokens``, as vLLM
answers (OpenAI would end with ``response.incomplete``); usage is in ``response.completed``.
"""

from __future__ import annotations

import time
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
from agentx.apis.chat_parts import Message, dump, function_tool, text_of, tool_call
from agentx.apis.emit import SSE_CONTENT_TYPE, Emitter, Pieces, UsageCounts, dumps, sse_event
from agentx.apis.family import EMPTY, Family, ToolPairs, no_model_in_path
from agentx.apis.names import Api
from agentx.apis.openai_chat import (
    asked_tokens,
    chat_message,
    error_body,
    no_tool_results,
    tool_choice,
)
from agentx.apis.openai_chat import context_error as chat_context_error
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
    server_error_text,
)
from agentx.apis.usage_counts import (
    Raw,
    UsageCheck,
    as_int,
    cached_count,
    checked,
)
from agentx.core.models import JSON, Response, Usage

PATH = "/v1/responses"


# -- usage -------------------------------------------------------------------------------------


def responses_usage(raw: Raw, timings: Raw | None, check: UsageCheck) -> Usage:
    return Usage(
        prompt_tokens=check.count(raw, "input_tokens"),
        cached_tokens=cached_count(raw, check),
        completion_tokens=check.count(raw, "output_tokens"),
        reasoning_tokens=check.details(raw, "output_tokens_details", "reasoning_tokens"),
    )


# -- capture: the response assembled -----------------------------------------------------------

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
            usage=checked(responses_usage, as_obj(final.get("usage")))[0],
        )


# -- replay: the stream parser and the native request ------------------------------------------


class ResponsesStreamParser(StreamParser):
    """OpenAI ``/v1/responses`` streaming events."""

    __slots__ = ()
    api = Api.OPENAI_RESPONSES

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        obj = self._load(payload)
        kind = obj.get("type") or (name.decode() if name else "")
        if kind == "response.output_text.delta":
            if obj.get("delta"):
                self._token(t_ns, True)
                if self.live:
                    self.text_parts.append(obj["delta"])
        elif kind in (
            "response.reasoning_text.delta",
            "response.reasoning_summary_text.delta",
            "response.function_call_arguments.delta",
        ):
            if obj.get("delta"):
                self._token(t_ns, False)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = obj.get("response") or {}
            usage = response.get("usage")
            if usage is not None:
                self._set(*checked(responses_usage, usage))
            self.finish_reason = response.get("status") or kind
            if kind == "response.failed":
                raise StreamProtocolError(
                    f"response failed: {server_error_text(response.get('error'))}"
                )
            self.done = True


def replay_body(body: dict[str, Any], model: str, max_tokens: int) -> str:
    body["model"] = model
    body["max_output_tokens"] = max_tokens
    body["stream"] = True
    return PATH


# -- translation to OpenAI chat ----------------------------------------------------------------


def responses_item(item: JSON) -> list[Message]:
    if isinstance(item, str):
        return [{"role": "user", "content": item}]
    if not isinstance(item, dict):
        return [{"role": "user", "content": dump(item)}]
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return chat_message({"role": item["role"], "content": item.get("content")})
    if kind == "reasoning":
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments", item.get("input", item.get("action")))
        call = tool_call(
            str(item.get("call_id") or item.get("id") or ""), str(item.get("name") or kind), args
        )
        return [{"role": "assistant", "content": "", "tool_calls": [call]}]
    if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        return [
            {
                "role": "tool",
                "content": text_of(item.get("output")),
                "tool_call_id": item.get("call_id", ""),
            }
        ]
    return [{"role": "user", "content": dump({k: v for k, v in item.items() if k != "id"})}]


def merge_tool_calls(messages: list[Message]) -> list[Message]:
    """Consecutive assistant items (a message, then its function calls) -> one chat message."""
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and m["role"] == "assistant"
            and prev["role"] == "assistant"
            and m.get("tool_calls")
            and not m["content"]
        ):
            out[-1] = {**prev, "tool_calls": [*prev.get("tool_calls", ()), *m["tool_calls"]]}
        else:
            out.append(m)
    return out


def responses_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            out.append(
                function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"))
            )
        elif tool.get("type") == "custom":
            out.append(function_tool(tool.get("name"), tool.get("description"), None))
    return out


# -- serve-sim: the request, the answer, the errors --------------------------------------------


def parse_responses(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/responses`` (OpenAI Responses). The whole conversation must be in ``input``:
    serve-sim stores no responses, so ``previous_response_id`` is refused (as vLLM refuses an id
    it does not hold) rather than answered with a prompt it cannot count."""
    items = body.get("input")
    if items is None:
        raise RequestError("input: field required", param="input")
    if isinstance(items, str):
        if not items:
            raise RequestError("input must not be empty", param="input")
    elif not isinstance(items, list) or not items:
        raise RequestError("input must be a string or a non-empty array", param="input")
    elif not all(isinstance(item, dict) for item in items):
        raise RequestError("input items must be objects", param="input")
    if body.get("previous_response_id") is not None:
        raise RequestError(
            "previous_response_id is not supported by agentx serve-sim (it stores no "
            "responses): send the whole conversation in input",
            param="previous_response_id",
        )
    max_tokens = int_field(body, "max_output_tokens", 1)
    min_tokens = int_field(body, "min_tokens", 0) or 0
    if max_tokens is not None and min_tokens > max_tokens:
        raise RequestError(
            f"min_tokens ({min_tokens}) must be <= max_output_tokens ({max_tokens})",
            param="min_tokens",
        )
    return SimRequest(
        api=Api.OPENAI_RESPONSES,
        body=body,
        model=model_field(body, default_model),
        stream=bool_field(body, "stream"),
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=bool_field(body, "ignore_eos"),
    )


def offered_tools(body: dict[str, JSON]) -> list[tuple[str, JSON]]:
    """``(name, JSON schema)`` of each ``function`` tool, in order: built-in and custom
    (free-text) tools are never called."""
    specs: list[tuple[str, JSON]] = []
    tools = body.get("tools")
    if not isinstance(tools, list):
        return specs
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function" and isinstance(tool.get("name"), str):
            specs.append((tool["name"], tool.get("parameters")))
    return specs


def parse_request(body: dict[str, JSON], served_model: str, route: Route) -> SimRequest:
    return parse_responses(body, served_model)


# request fields a response object repeats, with OpenAI's defaults when the request has none
_ECHOED: dict[str, JSON] = {
    "instructions": None,
    "max_output_tokens": None,
    "metadata": {},
    "parallel_tool_calls": True,
    "reasoning": None,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
}


def responses_usage_body(u: UsageCounts) -> dict[str, JSON]:
    return {
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


class ResponsesEmitter:
    content_type = SSE_CONTENT_TYPE
    terminator: bytes | None = b"event: response.completed"

    def __init__(
        self,
        response_id: str,
        item_id: str,
        created_at: int,
        model: str,
        plan: OutputPlan,
        seed: int,
        request: dict[str, JSON],
    ) -> None:
        self.response_id = response_id
        self.item_id = item_id
        self.created_at = created_at
        self.model = model
        self.plan = plan
        self._pieces = Pieces(plan, seed)
        self._echo = {k: request.get(k, default) for k, default in _ECHOED.items()}
        if plan.tool_call is None:
            kind = "response.output_text.delta"
            where = b',"output_index":0,"content_index":0,"delta":"'
            self._mid = b'","logprobs":[],"sequence_number":'
            self._first_seq = 4  # created, in_progress, output_item.added, content_part.added
        else:
            kind = "response.function_call_arguments.delta"
            where = b',"output_index":0,"delta":"'
            self._mid = b'","sequence_number":'
            self._first_seq = 3  # created, in_progress, output_item.added
        name = kind.encode()
        self._pre = (
            b"event: " + name + b'\ndata: {"type":"' + name + b'","item_id":' + dumps(item_id)
        ) + where

    def _response(self, status: str, output: list[JSON], usage: JSON) -> dict[str, JSON]:
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": output,
            "previous_response_id": None,
            "store": False,
            "truncation": "disabled",
            "usage": usage,
            "user": None,
            **self._echo,
        }

    def _item(self, done: bool, text: str = "") -> dict[str, JSON]:
        """The output item, in progress (empty) or done (with ``text``, or the call's
        arguments)."""
        status = "completed" if done else "in_progress"
        tc = self.plan.tool_call
        if tc is not None:
            return {
                "type": "function_call",
                "id": self.item_id,
                "call_id": tc.call_id,
                "name": tc.name,
                "arguments": tc.arguments if done else "",
                "status": status,
            }
        content: list[JSON] = [self._part(text)] if done else []
        return {
            "type": "message",
            "id": self.item_id,
            "status": status,
            "role": "assistant",
            "content": content,
        }

    @staticmethod
    def _part(text: str) -> dict[str, JSON]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def _event(self, seq: int, kind: str, fields: dict[str, JSON]) -> bytes:
        return sse_event(kind, {"type": kind, "sequence_number": seq, **fields})

    def opening(self, usage: UsageCounts) -> bytes:
        started = self._response("in_progress", [], None)
        out = (
            self._event(0, "response.created", {"response": started})
            + self._event(1, "response.in_progress", {"response": started})
            + self._event(
                2, "response.output_item.added", {"output_index": 0, "item": self._item(False)}
            )
        )
        if self.plan.tool_call is None:
            out += self._event(
                3,
                "response.content_part.added",
                {
                    "item_id": self.item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "part": self._part(""),
                },
            )
        return out

    def token(self, i: int) -> bytes:
        seq = str(self._first_seq + i).encode()
        return self._pre + self._pieces.escaped(i) + self._mid + seq + b"}\n\n"

    def tokens(self, start: int, stop: int) -> bytes:
        return b"".join([self.token(i) for i in range(start, stop)])

    def closing(self, usage: UsageCounts) -> bytes:
        seq = self._first_seq + self.plan.tokens
        tc = self.plan.tool_call
        where: dict[str, JSON] = {"item_id": self.item_id, "output_index": 0}
        text = self._pieces.text()
        if tc is not None:
            out = self._event(
                seq, "response.function_call_arguments.done", {**where, "arguments": tc.arguments}
            )
            seq += 1
        else:
            where["content_index"] = 0
            out = self._event(
                seq, "response.output_text.done", {**where, "text": text, "logprobs": []}
            ) + self._event(
                seq + 1, "response.content_part.done", {**where, "part": self._part(text)}
            )
            seq += 2
        item = self._item(True, text)
        done = self._response("completed", [item], responses_usage_body(usage))
        return (
            out
            + self._event(seq, "response.output_item.done", {"output_index": 0, "item": item})
            + self._event(seq + 1, "response.completed", {"response": done})
        )

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        item = self._item(True, self._pieces.text())
        return self._response("completed", [item], responses_usage_body(usage))


def make_emitter(
    next_id: Callable[[str], str], sreq: SimRequest, plan: OutputPlan, seed: int, sse: bool
) -> tuple[str, Emitter]:
    rid = next_id("resp_")
    item = next_id("msg_" if plan.tool_call is None else "fc_")
    created = int(time.time())
    return rid, ResponsesEmitter(rid, item, created, sreq.model, plan, seed, sreq.body)


def context_error(prompt_tokens: int, max_tokens: int | None, limit: int) -> RequestError:
    return chat_context_error(prompt_tokens, max_tokens, limit, param="input")


# -- scrub: tool calls paired with their results --------------------------------------------

_CALL_ITEMS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
}
_RESULT_ITEMS = frozenset(_CALL_ITEMS.values())


def tool_ids(msg: dict[str, JSON]) -> tuple[list[str], list[str]]:
    """(call ids, result ids): the ``call_id`` of a call item or of a call's output item."""
    calls: list[str] = []
    results: list[str] = []
    kind = msg.get("type")
    cid = msg.get("call_id")
    if isinstance(cid, str):
        if kind in _CALL_ITEMS:
            calls.append(cid)
        elif kind in _RESULT_ITEMS:
            results.append(cid)
    return calls, results


def strip_orphans(msg: dict[str, JSON], orphan_ids: set[str], unanswered: set[str]) -> JSON:
    cid = msg.get("call_id")
    kind = msg.get("type")
    if (kind in _RESULT_ITEMS and cid in orphan_ids) or (kind in _CALL_ITEMS and cid in unanswered):
        return EMPTY
    return msg


def drop_emptied(msg: dict[str, JSON]) -> bool:
    """An item is a call or a result, never a turn's whole content: it may always go."""
    return True


# -- the family --------------------------------------------------------------------------------


def _speaks(path: str) -> bool:
    return path.endswith("/responses") or path.endswith("/responses/compact")


FAMILY = Family(
    api=Api.OPENAI_RESPONSES,
    conversation_key="input",
    system_key="instructions",
    speaks=_speaks,
    model_from_path=no_model_in_path,
    serve_path=PATH,
    error_prefix=PATH,
    usage=responses_usage,
    assembler=ResponsesAssembler,
    stream_parser=ResponsesStreamParser,
    replay_body=replay_body,
    asked_tokens=asked_tokens,
    chat_messages=responses_item,
    chat_tools=responses_tools,
    system_text=text_of,
    merge_messages=merge_tool_calls,
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
