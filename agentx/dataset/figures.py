"""The statistics of a packed config, one pass over its rows: the ``agentx.stats/1`` object
(:func:`agentx.workload.stats.summarize`, what ``agentx stats`` prints) and the card's own
figures, with the samples its charts are drawn from. ``pack`` and ``verify`` both call
:func:`measure`, so a verifier recomputes exactly what the card says."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from agentx.core.models import Exchange
from agentx.core.percentiles import percentiles
from agentx.dataset.layout import agent_name
from agentx.results.dataset import Captured, Figures, TurnHits
from agentx.results.stats import Stats
from agentx.workload.stats import STATS_SKIPS, output_tokens_of, summarize

WALL_CLOCK_FROM = datetime(2000, 1, 1, tzinfo=UTC)  # earlier: offsets, not dates (Weka's t)


@dataclass(slots=True)
class _Session:
    requests: int = 0
    start_ns: int | None = None
    end_ns: int | None = None
    peak: int = 0


@dataclass(frozen=True, slots=True)
class Measured:
    """A config's figures and the samples the card's charts are drawn from."""

    stats: Stats
    figures: Figures
    captured: Captured
    input_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    think_time_s: tuple[float, ...]
    requests_per_session: tuple[int, ...]


def _date(ns: int | None) -> str | None:
    if ns is None:
        return None
    when = datetime.fromtimestamp(ns / 1e9, UTC)
    return when.date().isoformat() if when >= WALL_CLOCK_FROM else None


@dataclass(slots=True)
class _Tally:
    sessions: dict[str, _Session] = field(default_factory=dict)
    threads: Counter[tuple[str, str]] = field(default_factory=Counter)
    turns: dict[int, list[int]] = field(default_factory=dict)  # turn -> [requests, prompt, hit]
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    think: list[float] = field(default_factory=list)
    agents: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    first_ns: int | None = None
    last_ns: int | None = None

    def add(self, ex: Exchange, prompt: int | None, hit: int) -> None:
        """One model call, as :func:`summarize` counted it."""
        thread = (ex.session_id, ex.thread_id)
        turn = self.threads[thread]
        self.threads[thread] += 1
        if prompt is not None:
            row = self.turns.setdefault(turn, [0, 0, 0])
            row[0] += 1
            row[1] += prompt
            row[2] += hit
        n_in = ex.usage.prompt_tokens if ex.usage.prompt_tokens is not None else prompt
        n_out = output_tokens_of(ex)
        if n_in is not None:
            self.inputs.append(n_in)
        if n_out is not None:
            self.outputs.append(n_out)
        if ex.think_time_s is not None:
            self.think.append(ex.think_time_s)
        self.agents[agent_name(ex)] += 1
        self.models[ex.model or "unknown"] += 1
        start = ex.timing.start_wall_ns
        end = start + ex.timing.e2e_ns if ex.timing.e2e_ns is not None else start
        self.first_ns = start if self.first_ns is None else min(self.first_ns, start)
        self.last_ns = start if self.last_ns is None else max(self.last_ns, start)
        s = self.sessions.get(ex.session_id)
        if s is None:
            s = self.sessions[ex.session_id] = _Session()
        s.requests += 1
        s.start_ns = start if s.start_ns is None else min(s.start_ns, start)
        s.end_ns = end if s.end_ns is None else max(s.end_ns, end)
        s.peak = max(s.peak, (n_in or 0) + (n_out or 0))


def measure_exchanges(exchanges: Iterable[Exchange]) -> Measured:
    """The figures of rows in trace order (text rows hashed at agentx's default block size
    with its cl100k tokens; hash-only rows at their own)."""
    tally = _Tally()
    stats = summarize(exchanges, each=tally.add)
    durations = [
        (s.end_ns - s.start_ns) / 1e9
        for s in tally.sessions.values()
        if s.start_ns is not None and s.end_ns is not None
    ]
    per_session = [s.requests for s in tally.sessions.values()]
    figures = Figures(
        turns_per_thread=percentiles(list(tally.threads.values())),
        requests_per_session=percentiles(per_session),
        session_duration_s=percentiles(durations),
        peak_context_tokens=percentiles([s.peak for s in tally.sessions.values()]),
        hit_rate_by_turn=tuple(TurnHits(turn, *row) for turn, row in sorted(tally.turns.items())),
    )
    captured = Captured(
        agents=dict(sorted(tally.agents.items())),
        models=dict(sorted(tally.models.items())),
        first_date=_date(tally.first_ns),
        last_date=_date(tally.last_ns),
    )
    return Measured(
        replace(stats, trace=None, format=None),
        figures,
        captured,
        tuple(tally.inputs),
        tuple(tally.outputs),
        tuple(tally.think),
        tuple(per_session),
    )


def measure(path: str | os.PathLike[str]) -> Measured:
    """The figures of an agentx trace (a packed config's directory of files)."""
    from agentx.store import iter_exchanges
    from agentx.store.schema import COLUMNS

    columns = [c for c in COLUMNS if c not in STATS_SKIPS]
    return measure_exchanges(iter_exchanges(path, shared=True, columns=columns))
