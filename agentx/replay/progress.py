"""The live progress line of a replay (rich), and the snapshot it is drawn from.

Workers send :class:`Snapshot` values to the parent, which sums them; a single process draws its
own. The display refreshes twice a second from a task on the event loop (no render thread).
With a :class:`Goal` (the requests the run will send, or its ``--duration``) it also shows the
total and an ETA.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, fields

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from agentx.replay.lanes import Counters
from agentx.replay.options import ReplayOptions


@dataclass(frozen=True, slots=True)
class Goal:
    """Where the run ends: after ``requests`` responses, or ``duration_s`` after it started."""

    requests: int | None = None
    duration_s: float | None = None
    think_s: float | None = None  # the think time the schedule waits at least (estimate)


def goal_of(
    options: ReplayOptions, plan_requests: int | None, think_s: float | None = None
) -> Goal:
    """``--duration`` ends by time; ``--max-requests`` after that many measured requests (plus
    the warm-up ones); otherwise every planned request of this shard is sent once (``None``:
    not known before the run, a plan whose sessions are indexed as they are needed)."""
    s = options.schedule
    if s.duration_s is not None:
        return Goal(duration_s=s.duration_s)
    if s.max_requests is not None:
        return Goal(requests=s.max_requests + s.warmup * s.concurrency)
    return Goal(requests=plan_requests, think_s=think_s)


def clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(round(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass(frozen=True, slots=True)
class Snapshot:
    sent: int = 0
    in_flight: int = 0
    ok: int = 0
    errors: int = 0
    output_tokens: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cached_known_prompt: int = 0
    sessions_started: int = 0
    sessions_completed: int = 0
    active_lanes: int = 0
    cpu_s: float = 0.0

    @classmethod
    def of(cls, c: Counters, cpu_s: float) -> Snapshot:
        return cls(
            c.sent,
            c.in_flight,
            c.ok,
            c.errors,
            c.output_tokens,
            c.prompt_tokens,
            c.cached_tokens,
            c.cached_known_prompt,
            c.sessions_started,
            c.sessions_completed,
            c.active_lanes,
            cpu_s,
        )

    def __add__(self, other: Snapshot) -> Snapshot:
        return Snapshot(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


class ProgressView:
    """Rates over the last few seconds, drawn as one small table on stderr."""

    WINDOW_S = 5.0

    def __init__(
        self, lanes: int, console: Console | None = None, goal: Goal | None = None
    ) -> None:
        self.lanes = lanes
        self.goal = goal or Goal()
        self.console = console or Console(stderr=True)
        self._history: deque[tuple[float, Snapshot]] = deque()
        self._t0 = time.perf_counter()
        self._live: Live | None = None

    def __enter__(self) -> ProgressView:
        self._live = Live(
            self._render(Snapshot()), console=self.console, auto_refresh=False, transient=True
        )
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def update(self, snap: Snapshot) -> None:
        now = time.perf_counter()
        self._history.append((now, snap))
        while len(self._history) > 2 and now - self._history[0][0] > self.WINDOW_S:
            self._history.popleft()
        if self._live is not None:
            self._live.update(self._render(snap), refresh=True)

    def _rates(self, snap: Snapshot) -> tuple[float, float, float]:
        if len(self._history) < 2:
            return 0.0, 0.0, 0.0
        (t0, a), (t1, b) = self._history[0], self._history[-1]
        dt = max(t1 - t0, 1e-9)
        return (
            (b.ok + b.errors - a.ok - a.errors) / dt,
            (b.output_tokens - a.output_tokens) / dt,
            (b.cpu_s - a.cpu_s) / dt,
        )

    def _eta(self, done: int, req_s: float, elapsed: float) -> str:
        g = self.goal
        if g.duration_s is not None:
            left = g.duration_s - elapsed
            return f"  ETA {clock(left)}" if left > 0 else "  draining"
        if g.requests is not None and req_s > 0 and done < g.requests:
            return f"  ETA {clock((g.requests - done) / req_s)}"
        if g.think_s is not None and done < (g.requests or done + 1) and g.think_s > elapsed:
            return f"  ETA >{clock(g.think_s - elapsed)} (think time)"  # no answers yet to rate
        return ""

    def _render(self, snap: Snapshot) -> Group:
        req_s, tok_s, cpu = self._rates(snap)
        elapsed = time.perf_counter() - self._t0
        done = snap.ok + snap.errors
        total = f"/{self.goal.requests}" if self.goal.requests is not None else ""
        hit = (
            f"{snap.cached_tokens / snap.cached_known_prompt:.1%}"
            if snap.cached_known_prompt
            else "n/a"
        )
        errors = f"[red]errors {snap.errors}[/]" if snap.errors else "errors 0"
        # two lines, each within 80 columns for any count a run reaches in practice
        first = (
            f"[bold]replay[/] {clock(elapsed)}{self._eta(done, req_s, elapsed)}  requests "
            f"{done}{total} (+{snap.in_flight} in flight)  {errors}"
        )
        second = (
            f"  lanes {snap.active_lanes}/{self.lanes}  sessions done {snap.sessions_completed}"
            f" of {snap.sessions_started} started  {req_s:.1f} req/s  {tok_s:,.0f} tok/s  "
            f"hit {hit}  cpu {cpu:.0%}"
        )
        return Group(Text.from_markup(first, overflow="ellipsis"), Text.from_markup(second))
