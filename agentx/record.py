"""One replayed request, as measured by the client: the row of ``requests.parquet``.

Produced by the replay lanes, stored by ``agentx.store.results``, consumed by ``agentx.metrics``
and ``agentx.report``: it lives below all of them, so none imports upwards. The error kinds
(``ERR_*``) are the closed vocabulary of ``RequestRecord.error_type``.
All ``*_ns`` durations are ``time.perf_counter_ns`` differences from ``sent_ns``; ``sent_ns`` and
``scheduled_ns`` are perf-counter instants of this run (only their difference is meaningful);
``start_wall_ns`` is wall clock and only orders and labels rows. Unknown is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

# error_type values: a small closed vocabulary so runs can be compared
ERR_CONNECT = "connect"  # connection refused, DNS failure
ERR_TIMEOUT = "timeout"
ERR_HTTP = "http"  # non-2xx status
ERR_RESET = "reset"  # connection closed mid-stream
ERR_PROTOCOL = "protocol"  # malformed SSE / JSON
ERR_NO_USAGE = "no_usage"  # stream ended without a usage block (row still counts as ok)
ERR_BAD_USAGE = "bad_usage"  # impossible token counts, left unknown (row still counts as ok)
ERR_CANCELLED = "cancelled"  # run stopped (Ctrl-C, --duration drain deadline)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    request_id: str  # unique within the run
    source_request_id: str  # the trace row it replays
    lane: int
    session_id: str
    thread_id: str
    turn: int  # position of the request in its thread, from 0
    warmup: bool
    start_wall_ns: int
    scheduled_ns: int
    sent_ns: int
    status: int | None  # HTTP status; None when no response arrived
    ok: bool
    error_type: str | None = None
    error: str | None = None
    ttfb_ns: int | None = None  # first response byte
    ttft_ns: int | None = None  # first chunk with any generated token (content/reasoning/tool)
    ttfc_ns: int | None = None  # first content token
    e2e_ns: int | None = None
    itl_ns: tuple[int, ...] = ()  # gaps between successive token-carrying chunks
    prompt_tokens: int | None = None  # as reported by the server
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    expected_prompt_tokens: int | None = None  # agentx's own count of what it sent
    expected_completion_tokens: int | None = None  # max_tokens it asked for
    theoretical_hit_tokens: int | None = None  # unbounded-cache hit of this request, in send order
    in_window: bool = True  # False: in flight at the --duration deadline, finished after (drained)

    @property
    def dispatch_lag_ns(self) -> int:
        return self.sent_ns - self.scheduled_ns
