"""Roll-ups of a run's records: per session, per turn depth, and a per-second time series (the
rows of :mod:`agentx.results.summary.rollups`).

All three describe the measured requests (not warm-up; drained requests included in the time
series only, flagged by their own bins). Hit rates here are the *reported* ones (usage
``cached_tokens`` / ``prompt_tokens``) and the theoretical ones, each ``None`` when unknown.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from agentx.core.percentiles import percentile, percentiles, ratio
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.results.summary.rollups import SecondRow, SessionRow, TurnRow


def _sum_known(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def reported_hit_rate(records: Iterable[RequestRecord]) -> float | None:
    """sum(cached_tokens) / sum(prompt_tokens) over the requests whose usage reported both."""
    pairs = [
        (r.cached_tokens, r.prompt_tokens)
        for r in records
        if r.cached_tokens is not None and r.prompt_tokens is not None
    ]
    if not pairs:
        return None
    return ratio(sum(c for c, _ in pairs), sum(p for _, p in pairs))


def theoretical_hit_rate(records: Iterable[RequestRecord]) -> float | None:
    """sum(theoretical_hit_tokens) / sum(expected_prompt_tokens) over the requests sent."""
    pairs = [
        (r.theoretical_hit_tokens, r.expected_prompt_tokens)
        for r in records
        if r.theoretical_hit_tokens is not None and r.expected_prompt_tokens is not None
    ]
    if not pairs:
        return None
    return ratio(sum(h for h, _ in pairs), sum(p for _, p in pairs))


def _ok_tokens(records: Sequence[RequestRecord]) -> tuple[int, int, int | None]:
    ok = [r for r in records if r.ok]
    inp = lat.total_tokens(lat.input_tokens, ok)
    out = lat.total_tokens(lat.output_tokens, ok)
    return inp, out, _sum_known(r.cached_tokens for r in ok)


def per_session(records: Sequence[RequestRecord]) -> list[SessionRow]:
    """One row per replayed session copy: a session on a lane (recycled copies are apart)."""
    groups: dict[tuple[int, str], list[RequestRecord]] = defaultdict(list)
    for r in records:
        groups[(r.lane, r.session_id)].append(r)
    rows = []
    for (lane, sid), rs in sorted(groups.items(), key=lambda kv: min(r.sent_ns for r in kv[1])):
        inp, out, cached = _ok_tokens(rs)
        ttfts = lat.known(lat.ttft_ms, rs)
        rows.append(
            SessionRow(
                session_id=sid,
                lane=lane,
                requests=len(rs),
                errors=sum(1 for r in rs if not r.ok),
                threads=len({r.thread_id for r in rs}),
                max_turn=max(r.turn for r in rs),
                duration_s=lat.span_s(rs),
                input_tokens=inp,
                output_tokens=out,
                cached_tokens=cached,
                reported_hit_rate=reported_hit_rate(rs),
                theoretical_hit_rate=theoretical_hit_rate(rs),
                ttft_ms_p50=percentile(ttfts, 50),
                ttft_ms_max=max(ttfts) if ttfts else None,
            )
        )
    return rows


def per_turn_depth(records: Sequence[RequestRecord]) -> list[TurnRow]:
    """One row per turn index: how TTFT and hit rate move as conversations grow."""
    groups: dict[int, list[RequestRecord]] = defaultdict(list)
    for r in records:
        groups[r.turn].append(r)
    rows = []
    for turn in sorted(groups):
        rs = groups[turn]
        prompts = lat.known(lat.input_tokens, rs)
        rows.append(
            TurnRow(
                turn=turn,
                requests=len(rs),
                errors=sum(1 for r in rs if not r.ok),
                input_tokens_mean=sum(prompts) / len(prompts) if prompts else None,
                ttft_ms=percentiles(lat.known(lat.ttft_ms, rs)),
                reported_hit_rate=reported_hit_rate(rs),
                theoretical_hit_rate=theoretical_hit_rate(rs),
            )
        )
    return rows


def _spread(bins: list[float], start_s: float, end_s: float, amount: float) -> None:
    """Add ``amount`` to ``bins`` (one per second) in proportion to the overlap with each."""
    if end_s <= start_s:
        i = min(max(int(start_s), 0), len(bins) - 1)
        bins[i] += amount
        return
    rate = amount / (end_s - start_s)
    i = max(math.floor(start_s), 0)
    while i < len(bins) and i < end_s:
        lo, hi = max(start_s, i), min(end_s, i + 1)
        if hi > lo:
            bins[i] += rate * (hi - lo)
        i += 1


def time_series(
    records: Sequence[RequestRecord],
    origin_ns: int,
    server_points: Sequence[dict[str, Any]] = (),
) -> list[SecondRow]:
    """Per-second bins from ``origin_ns`` (perf counter): requests started and completed, errors,
    output tokens (spread over each request's decode), reported hit rate of the requests that
    completed in the bin, and the server's interval hit rate and KV usage from its scrapes."""
    if not records:
        return []
    n = max(int((lat.end_ns(r) - origin_ns) // lat.NS_PER_S) for r in records) + 1
    started = [0] * n
    completed = [0] * n
    errors = [0] * n
    out_tokens = [0.0] * n
    cached: list[int | None] = [None] * n
    prompt: list[int | None] = [None] * n
    ttfts: list[list[float]] = [[] for _ in range(n)]
    for r in records:
        s = max((r.sent_ns - origin_ns) / lat.NS_PER_S, 0.0)
        e = max((lat.end_ns(r) - origin_ns) / lat.NS_PER_S, 0.0)
        started[min(int(s), n - 1)] += 1
        ei = min(int(e), n - 1)
        if not r.ok:
            errors[ei] += 1
            continue
        completed[ei] += 1
        if (t := lat.ttft_ms(r)) is not None:
            ttfts[ei].append(t)
        out = lat.output_tokens(r)
        if out:
            first = s + (r.ttft_ns or 0) / lat.NS_PER_S
            _spread(out_tokens, first, e, out)
        if r.cached_tokens is not None and r.prompt_tokens is not None:
            cached[ei] = (cached[ei] or 0) + r.cached_tokens
            prompt[ei] = (prompt[ei] or 0) + r.prompt_tokens
    server: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in server_points:
        i = int((p["t_ns"] - origin_ns) // lat.NS_PER_S)
        if 0 <= i < n:
            server[i].append(p)
    rows = []
    for i in range(n):
        pts = server.get(i, [])
        q = sum(p["queries"] for p in pts if p.get("queries") is not None)
        h = sum(p["hits"] for p in pts if p.get("hits") is not None)
        usage = [p["kv_cache_usage_perc"] for p in pts if p.get("kv_cache_usage_perc") is not None]
        rows.append(
            SecondRow(
                t_s=i,
                started=started[i],
                completed=completed[i],
                errors=errors[i],
                output_tokens=round(out_tokens[i], 3),
                cached_tokens=cached[i],
                prompt_tokens=prompt[i],
                reported_hit_rate=ratio(cached[i], prompt[i]),
                ttft_ms_p50=percentile(ttfts[i], 50),
                server_hit_rate=ratio(h, q) if any(p.get("queries") for p in pts) else None,
                kv_cache_usage_perc=usage[-1] if usage else None,
            )
        )
    return rows
