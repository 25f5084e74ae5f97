"""What to replay: sessions -> threads -> turns, with the recorded timing between them.

Only model calls are replayed: rows of other traffic, rows flagged ``non_model`` or ``partial``,
and requests the provider refused when they were captured (status >= 400) are skipped and
counted. Within a thread, each turn waits for the previous one plus the recorded think time.
A thread other than the session's first starts after its recorded *predecessor* (its parent
request when the trace names one, else the latest request of another thread that had finished
when the thread began) plus the recorded gap; so subagents start at their recorded offsets and
run concurrently with their parent, as captured.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentx.errors import TraceError, UsageError
from agentx.flags import FLAG_NON_MODEL, FLAG_PARTIAL
from agentx.formats import load_exchanges as load_any
from agentx.formats.convert import with_text
from agentx.models import API_ANTHROPIC_MESSAGES, MODEL_APIS, Exchange
from agentx.tokens import conversation

SKIP_FLAGS = (FLAG_NON_MODEL, FLAG_PARTIAL)
NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Turn:
    exchange: Exchange
    index: int  # position in its thread, from 0
    think_s: float  # recorded gap after the previous turn of the thread (0 for the first)


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    thread_id: str
    turns: tuple[Turn, ...]
    after: tuple[int, int] | None  # (thread, turn) of this session that must finish first
    delay_s: float  # recorded gap between that finish (or the session start) and the first turn


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session_id: str
    index: int  # position in the trace
    threads: tuple[ThreadPlan, ...]

    @property
    def requests(self) -> int:
        return sum(len(t.turns) for t in self.threads)


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    sessions: tuple[SessionPlan, ...]
    apis: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows
    synthesized: int = 0  # hash-only rows given synthetic text (agentx.formats.convert.with_text)

    @property
    def requests(self) -> int:
        return sum(s.requests for s in self.sessions)

    @property
    def max_threads(self) -> int:
        return max((len(s.threads) for s in self.sessions), default=1)


def load_exchanges(path: Path) -> list[Exchange]:
    """Any trace agentx reads (its own Parquet traces, Weka, Mooncake), in trace order.

    Bodies share their conversation items between rows (``shared=True``): replay never mutates
    a captured body, it builds new ones.
    """
    return list(load_any(path, shared=True))


def _with_text(ex: Exchange) -> Exchange:
    """What ``agentx convert`` does to a hash-only row: text laid out block by block from its
    hash ids (identical id, identical block), exactly ``prompt_tokens`` cl100k tokens long."""
    return with_text(ex)


def skip_reason(ex: Exchange) -> str | None:
    if ex.api not in MODEL_APIS:
        return "not a model call"
    for flag in SKIP_FLAGS:
        if flag in ex.flags:
            return f"flagged {flag}"
    if ex.status is not None and ex.status >= 400:
        return "failed when captured"
    if not isinstance(ex.request, dict):
        return "no request body"
    if not conversation(ex.api, ex.request):
        return "no conversation"
    return None


def _end_ns(ex: Exchange) -> int:
    return ex.timing.start_wall_ns + (ex.timing.e2e_ns or 0)


def _think_s(prev: Exchange, ex: Exchange) -> float:
    if ex.think_time_s is not None:
        return max(0.0, ex.think_time_s)
    return max(0.0, (ex.timing.start_wall_ns - _end_ns(prev)) / NS_PER_S)


def _session(session_id: str, index: int, rows: list[Exchange]) -> SessionPlan:
    by_thread: dict[str, list[Exchange]] = {}
    for ex in sorted(rows, key=lambda e: e.timing.start_wall_ns):
        by_thread.setdefault(ex.thread_id, []).append(ex)
    order = sorted(by_thread, key=lambda t: by_thread[t][0].timing.start_wall_ns)
    where: dict[str, tuple[int, int]] = {}
    for ti, tid in enumerate(order):
        for k, ex in enumerate(by_thread[tid]):
            where[ex.request_id] = (ti, k)
    session_start = by_thread[order[0]][0].timing.start_wall_ns
    threads = []
    for ti, tid in enumerate(order):
        exs = by_thread[tid]
        turns = tuple(
            Turn(ex, k, 0.0 if k == 0 else _think_s(exs[k - 1], ex)) for k, ex in enumerate(exs)
        )
        first = exs[0]
        start = first.timing.start_wall_ns
        after: tuple[int, int] | None = None
        anchor = session_start
        if ti > 0:
            parent = where.get(first.parent_request_id or "")
            if parent is not None and parent[0] != ti:
                pex = by_thread[order[parent[0]]][parent[1]]
                if pex.timing.start_wall_ns <= start:
                    after, anchor = parent, _end_ns(pex)
            if after is None:  # the latest request of an earlier thread that had finished
                best: tuple[int, tuple[int, int]] | None = None
                for oi in range(ti):
                    for k, ex in enumerate(by_thread[order[oi]]):
                        end = _end_ns(ex)
                        if end <= start and (best is None or end > best[0]):
                            best = (end, (oi, k))
                if best is not None:
                    anchor, after = best
        threads.append(ThreadPlan(tid, turns, after, max(0.0, (start - anchor) / NS_PER_S)))
    return SessionPlan(session_id, index, tuple(threads))


def build_plan(
    exchanges: Iterable[Exchange],
    *,
    sessions: int | None = None,
    seed: int = 0,
    shard: tuple[int, int] = (0, 1),
    api_mode: str = "chat",
) -> ReplayPlan:
    """Group, filter, sample (``sessions`` with ``seed``) and shard (``i % N == I``)."""
    grouped: dict[str, list[Exchange]] = {}
    skipped: Counter[str] = Counter()
    apis: Counter[str] = Counter()
    synthesized = 0
    for ex in exchanges:
        if ex.hash_ids is not None and not conversation(ex.api, ex.request):
            ex = _with_text(ex)  # a hash-only row (Weka, Mooncake): synthetic text, same blocks
            synthesized += 1
        reason = skip_reason(ex)
        if reason is not None:
            skipped[reason] += 1
            continue
        apis[ex.api] += 1
        grouped.setdefault(ex.session_id, []).append(ex)
    if not grouped:
        detail = ", ".join(f"{n} {why}" for why, n in skipped.most_common()) or "it is empty"
        raise TraceError(f"nothing to replay: no model calls in the trace ({detail})")
    if api_mode == "messages" and set(apis) - {API_ANTHROPIC_MESSAGES}:
        others = ", ".join(sorted(set(apis) - {API_ANTHROPIC_MESSAGES}))
        raise UsageError(
            f"--api messages replays Anthropic requests; this trace also has {others} (use --api chat)"
        )
    plans = [_session(sid, i, rows) for i, (sid, rows) in enumerate(grouped.items())]
    if sessions is not None and sessions < len(plans):
        picked = sorted(random.Random(seed).sample(range(len(plans)), sessions))
        plans = [plans[i] for i in picked]
    index, count = shard
    plans = [p for i, p in enumerate(plans) if i % count == index]
    if not plans:
        raise UsageError(f"--shard {index}/{count} gets no session: the trace has fewer sessions")
    return ReplayPlan(tuple(plans), dict(apis), dict(skipped), synthesized)
