"""Per-request figures, derived from one :class:`RequestRecord` each. The single home of the math.

Definitions (``docs/metrics.md``):

- TTFT: first chunk carrying any generated token (content, reasoning or tool-call delta).
- TTFC: first content token. E2E: last byte. ITL: the gaps between token-carrying chunks, pooled
  over requests for the run's distribution (as ``vllm bench serve`` does).
- TPOT = (e2e - ttft) / (completion_tokens - 1), for requests with at least 2 output tokens,
  unless their token-carrying chunks all arrived at one instant (every inter-token gap 0 ns, as
  from a server that answers at once): their decode time is below the client clock's
  resolution, so TPOT and per-user speed are unknown for them, not 0 ms and millions of tok/s.
- Per-user output tokens/s = completion_tokens / (e2e - ttft), same requests.

Only successful requests carry latency figures; a failed request counts as an error instead.
Every function returns ``None`` when the figure is unknown, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from agentx.core.record import ERR_NO_USAGE, RequestRecord

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def measured(records: Iterable[RequestRecord]) -> list[RequestRecord]:
    """The requests the headline figures describe: not warm-up, sent inside the window."""
    return [r for r in records if not r.warmup and r.in_window]


def drained(records: Iterable[RequestRecord]) -> list[RequestRecord]:
    """Requests sent after ``--duration`` ended (reported apart)."""
    return [r for r in records if not r.warmup and not r.in_window]


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / NS_PER_MS


def ttft_ms(r: RequestRecord) -> float | None:
    return _ms(r.ttft_ns) if r.ok else None


def ttfc_ms(r: RequestRecord) -> float | None:
    return _ms(r.ttfc_ns) if r.ok else None


def e2e_ms(r: RequestRecord) -> float | None:
    return _ms(r.e2e_ns) if r.ok else None


def itl_ms(r: RequestRecord) -> list[float]:
    # numpy's float64(g) / 1e6 is Python's g / NS_PER_MS (both exact below 2**53, one rounding)
    return (r.itl_ns.ns / NS_PER_MS).tolist() if r.ok else []


def pooled_itl_ms(records: Sequence[RequestRecord]) -> npt.NDArray[np.float64]:
    """Every inter-token gap of the successful ``records``, in ms, as one array."""
    ok = [r.itl_ns.ns for r in records if r.ok and r.itl_ns]
    if not ok:
        return np.zeros(0, dtype=np.float64)
    gaps = np.concatenate(ok, dtype=np.float64)  # 8 bytes a gap, no int64 copy beside it
    gaps /= NS_PER_MS
    return gaps


def mean_itl_ms(r: RequestRecord) -> float | None:
    gaps = itl_ms(r)
    return sum(gaps) / len(gaps) if gaps else None


def decode_measured(r: RequestRecord) -> bool:
    """Was the request's decode time measured? Not when its token-carrying chunks all arrived
    at one instant (gaps recorded, every one 0 ns): the time after the first token is then
    transport, not decoding."""
    return len(r.itl_ns) == 0 or int(r.itl_ns.ns.sum()) > 0


def _decode_ns(r: RequestRecord) -> int | None:
    """Time from the first generated token to the end, for requests with >= 2 output tokens
    whose decode time was measured (:func:`decode_measured`)."""
    if not r.ok or r.ttft_ns is None or r.e2e_ns is None or r.completion_tokens is None:
        return None
    if r.completion_tokens < 2 or not decode_measured(r):
        return None
    return r.e2e_ns - r.ttft_ns


def tpot_ms(r: RequestRecord) -> float | None:
    d = _decode_ns(r)
    if d is None or r.completion_tokens is None:
        return None
    return d / (r.completion_tokens - 1) / NS_PER_MS


def output_tps_per_user(r: RequestRecord) -> float | None:
    d = _decode_ns(r)
    if d is None or d <= 0 or r.completion_tokens is None:
        return None
    return r.completion_tokens / (d / NS_PER_S)


def dispatch_lag_ms(r: RequestRecord) -> float:
    return r.dispatch_lag_ns / NS_PER_MS


def end_ns(r: RequestRecord) -> int:
    """When the request finished, on the run's perf-counter clock (its send when unknown)."""
    for d in (r.e2e_ns, r.ttfb_ns):
        if d is not None:
            return r.sent_ns + d
    return r.sent_ns


def span_s(records: Sequence[RequestRecord]) -> float | None:
    """First send to last finish of ``records``, in seconds; ``None`` when empty or instant."""
    if not records:
        return None
    ns = max(end_ns(r) for r in records) - min(r.sent_ns for r in records)
    return ns / NS_PER_S if ns > 0 else None


def reported_usage(r: RequestRecord) -> bool:
    """Did the server send a usage block for this request?"""
    return r.prompt_tokens is not None or r.completion_tokens is not None


def no_usage(r: RequestRecord) -> bool:
    return r.ok and (r.error_type == ERR_NO_USAGE or not reported_usage(r))


def input_tokens(r: RequestRecord) -> int | None:
    """Server-reported prompt tokens; agentx's own count when the server sent no usage."""
    return r.prompt_tokens if r.prompt_tokens is not None else r.expected_prompt_tokens


def output_tokens(r: RequestRecord) -> int | None:
    """Server-reported completion tokens; the token-carrying chunk count without usage."""
    if r.completion_tokens is not None:
        return r.completion_tokens
    if r.ttft_ns is None:
        return None
    return len(r.itl_ns) + 1


# Per-request value of each metric an SLO can name, in the unit the summary reports it in.
PER_REQUEST: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft": ttft_ms,
    "ttfc": ttfc_ms,
    "e2e": e2e_ms,
    "tpot": tpot_ms,
    "itl": mean_itl_ms,
    "output_tps_per_user": output_tps_per_user,
}


def known(
    fn: Callable[[RequestRecord], float | None], records: Iterable[RequestRecord]
) -> list[float]:
    """``fn`` of each record, leaving out the unknown ones."""
    out = []
    for r in records:
        v = fn(r)
        if v is not None:
            out.append(float(v))
    return out


def total_tokens(
    fn: Callable[[RequestRecord], int | None], records: Iterable[RequestRecord]
) -> int:
    """Sum of ``fn`` over ``records`` where known (``input_tokens``/``output_tokens``)."""
    acc = 0
    for r in records:
        v = fn(r)
        if v is not None:
            acc += v
    return acc
