"""``summary.json``'s ``errors`` block: the measured requests' failures by kind and HTTP status,
commonest first, each with the first message as the server (or the transport) said it. A run
that records it writes it; the reports show it when a summary has it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, integer, items, obj, text


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One kind of failure of the measured requests: its error type (``http``, ``timeout``,
    ...), the HTTP status (``None`` without a response), how many requests failed so, and the
    first one's message as the server (or the transport) said it."""

    kind: str | None = None
    status: int | None = None
    count: int | None = None
    message: str | None = None

    def to_json(self) -> Json:
        return {
            "kind": self.kind,
            "status": self.status,
            "count": self.count,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ErrorKind:
        message = text(d, "message") if "message" in d else text(d, "first_message")
        return cls(text(d, "kind"), integer(d, "status"), integer(d, "count"), message)


@dataclass(frozen=True, slots=True)
class Errors:
    """``errors``: the measured requests' failures by kind and status, commonest first."""

    by_kind: tuple[ErrorKind, ...] = ()

    def to_json(self) -> Json:
        return {"by_kind": [k.to_json() for k in self.by_kind]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Errors:
        return cls(tuple(ErrorKind.from_json(obj(k, "by_kind")) for k in items(d, "by_kind")))
