from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from agentx.replay import ReplayOptions
from agentx.replay.lanes import Counters
from agentx.replay.progress import Goal, ProgressView, Snapshot, clock, goal_of


def test_snapshots_add_up_across_workers() -> None:
    a = Snapshot.of(Counters(sent=3, ok=2, errors=1, cached_tokens=10, cached_known_prompt=20), 0.5)
    b = Snapshot.of(Counters(sent=1, ok=1, cached_tokens=5, cached_known_prompt=10), 0.25)
    total = a + b
    assert (total.sent, total.ok, total.errors, total.cpu_s) == (4, 3, 1, 0.75)
    assert (total.cached_tokens, total.cached_known_prompt) == (15, 30)


def test_view_draws_rates_and_hit_rate() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with ProgressView(4, console) as view:
        view.update(Snapshot())
        view.update(
            Snapshot(
                ok=10,
                errors=2,
                output_tokens=500,
                cached_tokens=30,
                cached_known_prompt=40,
                active_lanes=3,
            )
        )
    text = out.getvalue()
    assert "lanes 3/4" in text and "hit 75.0%" in text and "errors 2" in text and "req/s" in text


def _draw(goal: Goal, snap: Snapshot) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with ProgressView(2, console, goal=goal) as view:
        view._history.clear()
        view._history.append((view._t0 - 10.0, Snapshot()))  # 10 s ago: nothing done
        view.update(snap)
    return out.getvalue()


def test_total_and_eta_from_the_request_goal() -> None:
    text = _draw(Goal(requests=100), Snapshot(ok=20, errors=0))
    assert "requests 20/100" in text
    # 20 requests in ~10 s: 80 left at ~2 req/s is ~40 s
    eta = text.split("ETA ")[1].split()[0]
    assert eta.endswith("s") and 30 <= int(eta.rstrip("s")) <= 45


def test_eta_from_the_duration() -> None:
    assert "ETA " in _draw(Goal(duration_s=3600.0), Snapshot(ok=1))
    assert "draining" in _draw(Goal(duration_s=1e-9), Snapshot(ok=1))


def test_goal_of_the_options(tmp_path: Path) -> None:
    base = ReplayOptions.of(trace=tmp_path, endpoint="http://127.0.0.1:1", concurrency=2, warmup=1)
    assert goal_of(base, 40) == Goal(requests=40)
    schedule = base.schedule
    assert goal_of(replace(base, schedule=replace(schedule, max_requests=10)), 40) == Goal(
        requests=12
    )
    assert goal_of(replace(base, schedule=replace(schedule, duration_s=60.0)), 40) == Goal(
        duration_s=60.0
    )


def test_clock() -> None:
    assert (clock(42), clock(185), clock(3720)) == ("42s", "3m05s", "1h02m")
