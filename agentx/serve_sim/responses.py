"""Response bodies and SSE chunks in the OpenAI chat and Anthropic messages shapes.

Per-token chunks are two pre-encoded byte strings around the JSON-escaped piece, so a token
costs one concatenation, not a JSON encode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import orjson

from agentx.models import JSON
from agentx.serve_sim.output import OutputPlan, escaped_cycle, filler_text

_OPENAI_FINISH = {"stop": "stop", "length": "length", "tool": "tool_calls"}
_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"}


@dataclass(frozen=True, slots=True)
class UsageCounts:
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


def _dumps(value: JSON) -> bytes:
    return orjson.dumps(value)


class Emitter(Protocol):
    """Renders one answer: streamed as ``opening``, ``token(i)``..., ``closing``; or ``body``."""

    def opening(self, usage: UsageCounts) -> bytes: ...

    def token(self, i: int) -> bytes: ...

    def tokens(self, start: int, stop: int) -> bytes: ...

    def closing(self, usage: UsageCounts) -> bytes: ...

    def body(self, usage: UsageCounts) -> dict[str, JSON]: ...


class _Pieces:
    """The plan's pieces, escaped, indexable without materialising the filler."""

    def __init__(self, plan: OutputPlan, seed: int) -> None:
        self.plan = plan
        self.seed = seed
        if plan.tool_call is not None:
            self._escaped: tuple[bytes, ...] = tuple(
                orjson.dumps(p)[1:-1] for p in plan.tool_call.pieces
            )
        else:
            self._escaped = escaped_cycle(seed)
        self._n = len(self._escaped)

    def escaped(self, i: int) -> bytes:
        return self._escaped[i % self._n]

    def text(self) -> str:
        if self.plan.tool_call is not None:
            return ""
        return filler_text(self.plan.tokens, self.seed)


class OpenAIChatEmitter:
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
        self._pieces = _Pieces(plan, seed)
        head = (
            b'data: {"id":"' + request_id.encode() + b'","object":"chat.completion.chunk",'
            b'"created":' + str(created).encode() + b',"model":' + _dumps(model) + b","
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
        return self._head + _dumps(tail)[1:] + b"\n\n"

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
        return self._pre + self._pieces.escaped(i) + self._post

    def tokens(self, start: int, stop: int) -> bytes:
        pre, post, esc = self._pre, self._post, self._pieces.escaped
        return b"".join([pre + esc(i) + post for i in range(start, stop)])

    def closing(self, usage: UsageCounts) -> bytes:
        finish = _OPENAI_FINISH[self.plan.finish]
        out = self._chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}])
        if self.include_usage:
            out += self._chunk([], openai_usage(usage), with_usage=True)
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
            "usage": openai_usage(usage),
        }


def openai_usage(u: UsageCounts) -> dict[str, JSON]:
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    }


def anthropic_usage(u: UsageCounts, output_tokens: int) -> dict[str, JSON]:
    return {
        "input_tokens": u.prompt_tokens - u.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached_tokens,
        "output_tokens": output_tokens,
    }


def _event(name: str, data: JSON) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + _dumps(data) + b"\n\n"


class AnthropicEmitter:
    def __init__(self, message_id: str, model: str, plan: OutputPlan, seed: int) -> None:
        self.message_id = message_id
        self.model = model
        self.plan = plan
        self._pieces = _Pieces(plan, seed)
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
        start = self._message([], None, anthropic_usage(usage, 1))
        return (
            _event("message_start", {"type": "message_start", "message": start})
            + _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
            + _event("ping", {"type": "ping"})
        )

    def token(self, i: int) -> bytes:
        return self._pre + self._pieces.escaped(i) + self._post

    def tokens(self, start: int, stop: int) -> bytes:
        pre, post, esc = self._pre, self._post, self._pieces.escaped
        return b"".join([pre + esc(i) + post for i in range(start, stop)])

    def closing(self, usage: UsageCounts) -> bytes:
        stop = _ANTHROPIC_STOP[self.plan.finish]
        return (
            _event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": anthropic_usage(usage, usage.completion_tokens),
                },
            )
            + _event("message_stop", {"type": "message_stop"})
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
            anthropic_usage(usage, usage.completion_tokens),
        )


# -- errors --------------------------------------------------------------------------------------

_OPENAI_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
}


def openai_error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> dict[str, JSON]:
    kind = _OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def anthropic_error(status: int, message: str, kind: str | None = None) -> dict[str, JSON]:
    kind = kind or _ANTHROPIC_TYPES.get(
        status, "invalid_request_error" if status < 500 else "api_error"
    )
    return {"type": "error", "error": {"type": kind, "message": message}}
