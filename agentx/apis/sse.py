"""An incremental Server-Sent Events parser (WHATWG rules) for bytes that arrive in any chunking.

Chunk boundaries never align with events: a chunk may hold half a line, several events, or a
``\\r`` whose ``\\n`` comes in the next chunk. :meth:`SSEParser.feed` returns the events that a
chunk *completed*, so the caller can stamp each event with the arrival time of that chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EOL = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    event: str  # "message" when the stream named none
    data: str
    id: str | None = None


class SSEParser:
    """Feed bytes, get complete events. Holds at most one unfinished line and event."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._started = False  # the UTF-8 BOM is stripped at the very start only
        self._skip_lf = False  # the last chunk ended in "\r": a leading "\n" belongs to it

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._buf + chunk if self._buf else chunk
        if not self._started:
            if len(buf) < 3 and b"\xef\xbb\xbf".startswith(buf):
                self._buf = buf
                return []
            self._started = True
            if buf.startswith(b"\xef\xbb\xbf"):
                buf = buf[3:]
        events: list[SSEEvent] = []
        pos = 0
        for m in _EOL.finditer(buf):
            ev = self._line(buf[pos : m.start()])
            if ev is not None:
                events.append(ev)
            pos = m.end()
        if pos and buf[pos - 1 : pos] == b"\r":
            self._skip_lf = True
        self._buf = buf[pos:]
        return events

    def _line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", "replace")
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        # "retry" and unknown fields are ignored
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        ev = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
        self._data = []
        self._event = ""
        return ev

    @property
    def pending(self) -> bool:
        """True if bytes of an unfinished event are held (the stream stopped mid-event)."""
        return bool(self._buf or self._data)
