"""What a capture has done so far: the counters behind the status line and the summary."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class CaptureStats:
    requests: int = 0  # model calls written
    other: int = 0  # non-model rows written
    dropped: int = 0  # non-model requests dropped by option
    lost: int = 0  # rows that could not be written (disk full, ...)
    partial: int = 0  # model calls cut short or unanswered (non-model rows are not counted)
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: int = 0  # model calls whose token counts agentx counted (no usage reported)
    sessions: int = 0
    threads: int = 0
    in_flight: int = 0
    write_error: str | None = None


class StatsCounter:
    """:class:`CaptureStats` behind a lock: bumped by the recorder thread, read by any other."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = CaptureStats()

    def bump(self, **delta: int) -> None:
        with self._lock:
            self._stats = replace(
                self._stats, **{k: getattr(self._stats, k) + v for k, v in delta.items()}
            )

    def set_write_error(self, message: str) -> None:
        with self._lock:
            self._stats = replace(self._stats, write_error=message)

    def snapshot(self, *, sessions: int, threads: int, in_flight: int) -> CaptureStats:
        with self._lock:
            return replace(self._stats, sessions=sessions, threads=threads, in_flight=in_flight)


def summary_line(stats: CaptureStats) -> str:
    parts = [f"{stats.requests} model calls"]
    if stats.other:
        parts.append(f"{stats.other} other")
    if stats.partial:
        parts.append(f"{stats.partial} partial")
    parts.append(f"{stats.sessions} sessions, {stats.threads} threads")
    tokens = f"{stats.prompt_tokens:,} in / {stats.completion_tokens:,} out tokens"
    if stats.estimated:
        tokens += f" ({stats.estimated} calls counted by agentx: no usage reported)"
    parts.append(tokens)
    if stats.lost:
        parts.append(f"{stats.lost} NOT RECORDED")
    return " · ".join(parts)
