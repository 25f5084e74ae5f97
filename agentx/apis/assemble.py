"""What every family's capture assembler shares: the result type, the protocol, tolerant field
access.

Each assembler (``ChatAssembler`` in :mod:`agentx.apis.openai_chat`, ...; the family's
``assembler``) takes the response either as SSE events (``event``, which says whether an event
carried generated output, for time to first token) or as one JSON body (``body``), and builds
the normalised :class:`~agentx.core.models.Response` and :class:`~agentx.core.models.Usage`.
Assemblers never raise on odd input: a malformed event is skipped, a missing field is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from agentx.apis.sse import SSEEvent
from agentx.core.models import JSON, Response, Usage

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Assembled:
    response: Response
    usage: Usage
    model: str | None = None
    response_id: str | None = None
    error: str | None = None
    complete: bool = False  # the stream's own end marker (or a whole JSON body) was seen


class Assembler(Protocol):
    complete: bool  # the stream's own end marker (or a whole body) was seen
    error: str | None

    def event(self, ev: SSEEvent) -> bool: ...
    def body(self, obj: JSON) -> None: ...
    def result(self) -> Assembled: ...


class AssemblerBase:
    """The state every family tracks besides its content: ids, error, end marker."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.id: str | None = None
        self.error: str | None = None
        self.complete = False

    def _assembled(self, response: Response, usage: Usage) -> Assembled:
        return Assembled(
            response=response,
            usage=usage,
            model=self.model,
            response_id=self.id,
            error=self.error,
            complete=self.complete,
        )


def loads_obj(data: str) -> Obj | None:
    """A JSON object, or ``None`` for anything else (malformed data included)."""
    try:
        v = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return v if isinstance(v, dict) else None


def as_obj(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


def join(parts: list[str]) -> str | None:
    return "".join(parts) if parts else None


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
