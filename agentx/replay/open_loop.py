"""``--request-rate``: every request of a replay plan arrives alone.

The schedule's open loop (:mod:`agentx.schedule.arrivals`) makes *trees* arrive. For
``--session-rate`` the trees are the plan's sessions. For ``--request-rate`` each request
becomes a session of its own (:func:`single_requests`), in recorded order: no think time, no
waiting for the previous turn or for subagents (for traces without session structure, such as
Mooncake's, or to load a server with a trace's requests as independent arrivals). Each keeps
the session id, position, thread id and turn index it had in the trace, and the marker of its
session's copy (``LaneConfig.single_requests``), so turns of one session still share their
prefix.
"""

from __future__ import annotations

import dataclasses

from agentx.workload.plan import ReplayPlan, SessionPlan, Sessions, ThreadPlan, Turn


def for_arrivals(plan: ReplayPlan, request_rate: float | None) -> ReplayPlan:
    """The plan the schedule runs: with ``--request-rate``, every request alone."""
    if request_rate is None:
        return plan
    return dataclasses.replace(plan, sessions=single_requests(plan.sessions))


def single_requests(sessions: Sessions) -> Sessions:
    """Every request of ``sessions`` as a one-request session, in recorded order. The recorded
    order spans sessions, so a lazy plan is indexed whole first; each request is still read
    from the trace only when it is sent (its session's :class:`SessionIndex` goes with it)."""
    plans = list(sessions)
    order = sorted(
        (turn.meta.start_wall_ns, si, ti, k)
        for si, session in enumerate(plans)
        for ti, thread in enumerate(session.threads)
        for k, turn in enumerate(thread.turns)
    )
    flat: list[SessionPlan] = []
    for _, si, ti, k in order:
        session = plans[si]
        thread = session.threads[ti]
        turn = thread.turns[k]
        alone = ThreadPlan(thread.thread_id, (Turn(turn.meta, turn.index, 0.0, 0.0),), None, 0.0)
        flat.append(SessionPlan(session.session_id, session.index, (alone,), session.source))
    return Sessions(sessions.source, sessions.tally, flat)
