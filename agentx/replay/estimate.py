"""How long a replay's schedule waits before its server has done anything: the recorded think
time the lanes sit through, so a run that replays six minutes of a person thinking says so at its
start (with the ``--time-scale 0`` hint) instead of looking hung.

The figure is a floor: each session's main thread waits its scaled, capped think times; the
lanes share the sessions, so the run waits at least the sum over sessions divided by the lanes,
and at least the longest session. The server's own time comes on top.
"""

from __future__ import annotations

from agentx.replay.options import ReplayOptions
from agentx.workload.plan import ReplayPlan

HINT_AFTER_S = 30.0  # a shorter wait needs no word


def think_floor_s(plan: ReplayPlan, options: ReplayOptions, lanes: int) -> float | None:
    """The think time the run waits through at least, in seconds; ``None`` when the run ends
    by ``--duration``, sends with no think time, or its sessions are not indexed yet (a lazy
    plan: reading them all would delay the first request)."""
    s = options.schedule
    if s.duration_s is not None or s.time_scale <= 0 or not plan.sessions.complete:
        return None
    per_session = []
    for i in range(len(plan.sessions)):
        session = plan.sessions.plan(i)
        if session is None or not session.threads:
            continue
        waits = (t.think_s * s.time_scale for t in session.threads[0].turns)
        if s.max_think_s is not None:
            waits = (min(w, s.max_think_s) for w in waits)
        per_session.append(sum(waits))
    if not per_session:
        return None
    return max(sum(per_session) / max(lanes, 1), max(per_session))


def schedule_line(floor_s: float | None, options: ReplayOptions) -> str | None:
    """The line a run prints at its start when its think time is long."""
    if floor_s is None or floor_s < HINT_AFTER_S:
        return None
    from agentx.replay.progress import clock

    return (
        f"the schedule waits at least ~{clock(floor_s)} of recorded think time "
        f"(--time-scale {options.schedule.time_scale:g}; the server's time comes on top): "
        "--time-scale 0 sends each turn as soon as the previous one answers"
    )
