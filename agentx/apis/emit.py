"""What every family's emitter shares: the usage counts, the :class:`Emitter` interface, the
answer's pieces, and the SSE event framing.

Per-token chunks are two pre-encoded byte strings around the JSON-escaped piece, so a token
costs one concatenation, not a JSON encode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import orjson

from agentx.apis.answer import OutputPlan, escaped_cycle, filler_text
from agentx.core.models import JSON


@dataclass(frozen=True, slots=True)
class UsageCounts:
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


def dumps(value: JSON) -> bytes:
    return orjson.dumps(value)


def sse_event(name: str, data: JSON) -> bytes:
    """One named SSE event (``event:`` and ``data:`` lines)."""
    return b"event: " + name.encode() + b"\ndata: " + dumps(data) + b"\n\n"


SSE_CONTENT_TYPE = "text/event-stream"


class Emitter(Protocol):
    """Renders one answer: streamed as ``opening``, ``token(i)``..., ``closing``; or ``body``.

    ``content_type`` is the stream's media type; ``terminator`` the bytes the last event of
    ``closing`` starts with (the server-timing comment goes just before them), None when the
    stream is not SSE and has no place for a comment."""

    content_type: str
    terminator: bytes | None

    def opening(self, usage: UsageCounts) -> bytes: ...

    def token(self, i: int) -> bytes: ...

    def tokens(self, start: int, stop: int) -> bytes: ...

    def closing(self, usage: UsageCounts) -> bytes: ...

    def body(self, usage: UsageCounts) -> dict[str, JSON]: ...


class Pieces:
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

    def framed(self, pre: bytes, post: bytes, start: int, stop: int) -> bytes:
        """Tokens ``start``..``stop``, each as ``pre + piece + post`` (one SSE event each)."""
        esc = self.escaped
        return b"".join([pre + esc(i) + post for i in range(start, stop)])

    def text(self) -> str:
        if self.plan.tool_call is not None:
            return ""
        return filler_text(self.plan.tokens, self.seed)
