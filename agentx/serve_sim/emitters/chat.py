"""OpenAI chat completions: ``chat.completion`` bodies and ``chat.completion.chunk`` SSE."""

from __future__ import annotations

from agentx.core.models import JSON
from agentx.serve_sim.emitters.base import SSE_CONTENT_TYPE, Pieces, UsageCounts, dumps
from agentx.serve_sim.output import OutputPlan

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
