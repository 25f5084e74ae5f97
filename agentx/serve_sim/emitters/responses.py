"""OpenAI Responses: ``response`` bodies and the streamed events, numbered by
``sequence_number`` as OpenAI numbers them::

    response.created, response.in_progress, response.output_item.added,
    response.content_part.added, response.output_text.delta ..., response.output_text.done,
    response.content_part.done, response.output_item.done, response.completed

A tool call is one ``function_call`` output item instead: ``output_item.added``,
``function_call_arguments.delta`` ..., ``function_call_arguments.done``, ``output_item.done``.
The answer's status is ``completed`` even when it stopped at ``max_output_tokens``, as vLLM
answers (OpenAI would end with ``response.incomplete``); usage is in ``response.completed``.
"""

from __future__ import annotations

from agentx.core.models import JSON
from agentx.serve_sim.emitters.base import (
    SSE_CONTENT_TYPE,
    Pieces,
    UsageCounts,
    dumps,
    sse_event,
)
from agentx.serve_sim.output import OutputPlan

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


def responses_usage(u: UsageCounts) -> dict[str, JSON]:
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
        done = self._response("completed", [item], responses_usage(usage))
        return (
            out
            + self._event(seq, "response.output_item.done", {"output_index": 0, "item": item})
            + self._event(seq + 1, "response.completed", {"response": done})
        )

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        item = self._item(True, self._pieces.text())
        return self._response("completed", [item], responses_usage(usage))
