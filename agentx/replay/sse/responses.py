"""The OpenAI responses stream parser."""

from __future__ import annotations

from agentx.apis import Api
from agentx.apis.usage import checked_usage
from agentx.replay.sse.base import StreamParser, StreamProtocolError, error_text


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
                self._set(*checked_usage(Api.OPENAI_RESPONSES, usage))
            self.finish_reason = response.get("status") or kind
            if kind == "response.failed":
                raise StreamProtocolError(f"response failed: {error_text(response.get('error'))}")
            self.done = True
