"""Anthropic messages: ``message`` bodies and the ``message_start`` ... ``message_stop`` SSE."""

from __future__ import annotations

import orjson

from agentx.core.models import JSON
from agentx.serve_sim.emitters.base import SSE_CONTENT_TYPE, Pieces, UsageCounts, sse_event
from agentx.serve_sim.output import OutputPlan

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"}


def anthropic_usage(u: UsageCounts, output_tokens: int) -> dict[str, JSON]:
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
        start = self._message([], None, anthropic_usage(usage, 1))
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
                    "usage": anthropic_usage(usage, usage.completion_tokens),
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
            anthropic_usage(usage, usage.completion_tokens),
        )
