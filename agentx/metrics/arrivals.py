"""The open-loop figures of ``summary.json``'s ``schedule`` block: offered vs achieved rate."""

from __future__ import annotations

from collections.abc import Sequence

from agentx.core.percentiles import distribution
from agentx.results.summary.run import Arrivals
from agentx.schedule.arrivals import ArrivalLog


def arrival_summary(logs: Sequence[ArrivalLog], unit: str) -> Arrivals:
    """One block for the client processes' logs (each on its own clock: windows are lengths).

    ``unit`` is what arrived: ``session`` (``--session-rate``) or ``request``."""
    started = sum(len(log.start_s) for log in logs)
    window_s = max((log.window_end_s - log.window_start_s for log in logs), default=0.0)
    delays = [1000 * (s - d) for log in logs for d, s in zip(log.due_s, log.start_s, strict=True)]
    return Arrivals(
        arrival_unit=unit,
        offered_rate=sum(log.offered_rate_per_s for log in logs),
        achieved_rate=started / window_s if window_s > 0 else None,
        arrivals_started=started,
        arrivals_missed=sum(log.missed for log in logs),
        arrival_window_s=window_s,
        concurrency_cap=sum(log.cap for log in logs),
        arrivals_waited_for_slot=sum(log.waited for log in logs),
        arrival_start_delay_ms=distribution(delays),
    )


def arrival_warnings(block: Arrivals) -> list[str]:
    """What the reader of an open-loop summary must know: the offered rate was not met."""
    unit, achieved = block.arrival_unit, block.achieved_rate
    waited, missed = block.arrivals_waited_for_slot, block.arrivals_missed
    if not (waited or missed):
        return []
    got = f"{achieved:.3g}" if achieved is not None else "?"
    return [
        f"open loop: {waited} {unit} arrivals waited for a free slot and {missed} never started "
        f"(--concurrency {block.concurrency_cap} caps concurrent {unit}s): achieved "
        f"{got}/s of the offered {block.offered_rate:.3g}/s"
    ]
