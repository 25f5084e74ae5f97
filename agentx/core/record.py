"""One replayed request, as measured by the client: the row of ``requests.parquet``.

Produced by the replay lanes, stored by ``agentx.store.results``, consumed by ``agentx.metrics``
and ``agentx.report``: it lives below all of them, so none imports upwards. The error kinds
(``ERR_*``) are the closed vocabulary of ``RequestRecord.error_type``.
All ``*_ns`` durations are ``time.perf_counter_ns`` differences from ``sent_ns``; ``sent_ns`` and
``scheduled_ns`` are perf-counter instants of this run (only their difference is meaningful);
``start_wall_ns`` is wall clock and only orders and labels rows. Unknown is ``None``, never 0.
A row's inter-token gaps are :class:`Gaps`: 8 bytes a gap in one array (a view into the buffer
they were read from), not a tuple of Python ints (~40 bytes a gap), since a long run has tens
of millions of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

# error_type values: a small closed vocabulary so runs can be compared
ERR_CONNECT = "connect"  # connection refused, DNS failure
ERR_TIMEOUT = "timeout"
ERR_HTTP = "http"  # non-2xx status
ERR_RESET = "reset"  # connection closed mid-stream
ERR_PROTOCOL = "protocol"  # malformed SSE / JSON
ERR_NO_USAGE = "no_usage"  # stream ended without a usage block (row still counts as ok)
ERR_BAD_USAGE = "bad_usage"  # impossible token counts, left unknown (row still counts as ok)
ERR_CANCELLED = "cancelled"  # run stopped (Ctrl-C, --duration drain deadline)
ERR_REDIRECT = "redirect"  # a 3xx answer: replay does not follow it (the endpoint moved)
ERR_NO_CONTENT = "no_content"  # a 2xx answer without a body (204)
ERR_NOT_A_STREAM = "not_a_stream"  # a 2xx web page (text/html): a proxy or login page answered
# the kinds of a failed request (no_usage and bad_usage rows still count as ok)
FAILURE_KINDS = (
    ERR_CONNECT,
    ERR_TIMEOUT,
    ERR_HTTP,
    ERR_RESET,
    ERR_PROTOCOL,
    ERR_CANCELLED,
    ERR_REDIRECT,
    ERR_NO_CONTENT,
    ERR_NOT_A_STREAM,
)
_NOT_FOLLOWED = ": replay does not follow redirects"


def redirect_error(status: int, location: str | None) -> str:
    """The error of a redirect row (``location``: its ``Location``, redacted)."""
    return f"HTTP {status} redirect{f' to {location}' if location else ''}{_NOT_FOLLOWED}"


def redirect_origin(message: str | None) -> str | None:
    """The origin (``scheme://host:port``) a redirect row's error names; ``None`` when it names
    none or a relative one (the endpoint's own origin)."""
    if not message or not message.endswith(_NOT_FOLLOWED) or " redirect to " not in message:
        return None
    where = message[: -len(_NOT_FOLLOWED)].split(" redirect to ", 1)[1]
    scheme, sep, rest = where.partition("://")
    if not sep or not scheme.isalpha():
        return None
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0]}"


class Gaps(Sequence[int]):
    """An immutable sequence of int64 nanoseconds (a row's inter-token gaps), held in one
    read-only numpy array: built from any iterable of ints, or wrapping an int64 array as it is
    (no copy: :mod:`agentx.store.results` hands out views of the column it read). Iterating
    yields Python ints; it compares equal to a tuple or list of the same ints."""

    __slots__ = ("_ns",)

    def __init__(self, ns: Iterable[int] | npt.NDArray[np.int64] = ()) -> None:
        if isinstance(ns, np.ndarray) and ns.dtype == np.int64 and ns.ndim == 1:
            a = ns.view()
        elif isinstance(ns, list | tuple):
            a = np.array(ns, dtype=np.int64).reshape(-1)
        else:
            a = np.fromiter(ns, dtype=np.int64)
        a.flags.writeable = False
        self._ns = a

    @property
    def ns(self) -> npt.NDArray[np.int64]:
        """The gaps as a read-only int64 array (no copy)."""
        return self._ns

    def __len__(self) -> int:
        return int(self._ns.size)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Gaps: ...
    def __getitem__(self, index: int | slice) -> int | Gaps:
        if isinstance(index, slice):
            return Gaps(self._ns[index])
        return int(self._ns[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self._ns.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Gaps):
            return bool(np.array_equal(self._ns, other._ns))
        if isinstance(other, tuple | list):
            return bool(self._ns.tolist() == list(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._ns.tolist()))

    def __repr__(self) -> str:
        return f"Gaps({self._ns.tolist()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Gaps, (np.array(self._ns),))


NO_GAPS = Gaps()


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
    itl_ns: Gaps = NO_GAPS  # gaps between successive token-carrying chunks (any ints: made Gaps)
    prompt_tokens: int | None = None  # as reported by the server
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    expected_prompt_tokens: int | None = None  # agentx's own count of what it sent
    expected_completion_tokens: int | None = None  # max_tokens it asked for
    theoretical_hit_tokens: int | None = None  # unbounded-cache hit of this request, in send order
    in_window: bool = True  # False: in flight at the --duration deadline, finished after (drained)
    replica: int | None = None  # the --endpoint it was routed to (index); None: one endpoint
    # the unbounded-cache hit of the replica's own cache, fed only what was routed to it
    replica_theoretical_hit_tokens: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.itl_ns, Gaps):
            object.__setattr__(self, "itl_ns", Gaps(self.itl_ns))

    @property
    def dispatch_lag_ns(self) -> int:
        return self.sent_ns - self.scheduled_ns
