"""The open-loop figures of ``summary.json``'s ``schedule`` block: offered vs achieved rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentx.core.percentiles import distribution
from agentx.schedule.arrivals import ArrivalLog


def arrival_summary(logs: Sequence[ArrivalLog], unit: str) -> dict[str, Any]:
    """One block for the client processes' logs (each on its own clock: windows are lengths).

    ``unit`` is what arrived: ``session`` (``--session-rate``) or ``request``."""
    started = sum(len(log.start_s) for log in logs)
    window_s = max((log.window_end_s - log.window_start_s for log in logs), default=0.0)
    delays = [1000 * (s - d) for log in logs for d, s in zip(log.due_s, log.start_s, strict=True)]
    return {
        "mode": "open_loop",
        "arrival_unit": unit,
        f"offered_{unit}_rate": sum(log.offered_rate_per_s for log in logs),
        f"achieved_{unit}_rate": started / window_s if window_s > 0 else None,
        "arrivals_started": started,
        "arrivals_missed": sum(log.missed for log in logs),
        "arrival_window_s": window_s,
        "concurrency_cap": sum(log.cap for log in logs),
        "arrivals_waited_for_slot": sum(log.waited for log in logs),
        "arrival_start_delay_ms": distribution(delays),
    }


def arrival_warnings(block: dict[str, Any]) -> list[str]:
    """What the reader of an open-loop summary must know: the offered rate was not met."""
    unit = block["arrival_unit"]
    offered, achieved = block[f"offered_{unit}_rate"], block[f"achieved_{unit}_rate"]
    waited, missed = block["arrivals_waited_for_slot"], block["arrivals_missed"]
    if not (waited or missed):
        return []
    got = f"{achieved:.3g}" if achieved is not None else "?"
    return [
        f"open loop: {waited} {unit} arrivals waited for a free slot and {missed} never started "
        f"(--concurrency {block['concurrency_cap']} caps concurrent {unit}s): achieved "
        f"{got}/s of the offered {offered:.3g}/s"
    ]
