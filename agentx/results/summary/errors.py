"""``errors`` of ``summary.json``: the measured requests that failed, grouped by what went wrong.

One entry per (error kind, HTTP status), commonest first, with the first such request's message
in the server's own words and, when agentx recognises the message, what to change
(:mod:`agentx.metrics.errors` builds it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, integer, items, need, obj, text


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """``count`` measured requests failed as ``kind`` (``http``, ``connect``, ``timeout``, ...)
    with HTTP ``status`` (``None`` when no response arrived); ``message``: the first one's."""

    kind: str
    status: int | None
    count: int
    message: str | None = None
    hint: str | None = None  # what to change, when the message is one agentx knows

    @property
    def label(self) -> str:
        """``http 400``, ``connect``: the kind as the terminal and the report name it."""
        return self.kind if self.status is None else f"{self.kind} {self.status}"

    def to_json(self) -> Json:
        return {
            "kind": self.kind,
            "status": self.status,
            "count": self.count,
            "message": self.message,
            "hint": self.hint,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ErrorKind:
        return cls(
            need(text(d, "kind"), "kind"),
            integer(d, "status"),
            need(integer(d, "count"), "count"),
            text(d, "message"),
            text(d, "hint"),
        )


@dataclass(frozen=True, slots=True)
class Errors:
    """``by_kind``: commonest first."""

    by_kind: tuple[ErrorKind, ...] = ()

    @property
    def count(self) -> int:
        return sum(k.count for k in self.by_kind)

    def to_json(self) -> Json:
        return {"by_kind": [k.to_json() for k in self.by_kind]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Errors:
        return cls(tuple(ErrorKind.from_json(obj(k, "by_kind")) for k in items(d, "by_kind")))
