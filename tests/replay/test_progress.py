from __future__ import annotations

import io

from rich.console import Console

from agentx.replay.lanes import Counters
from agentx.replay.progress import ProgressView, Snapshot


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
