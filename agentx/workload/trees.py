"""A replay plan's sessions as the schedule's trees (:mod:`agentx.schedule`).

Times become seconds from the session's first request. A turn ends at its start plus its
recorded response time (``e2e``; a Weka ``api_time``); unknown counts as 0, as agentx-harness
counts a missing ``api_time``. A thread's predecessor (``ThreadPlan.after``: the request that
spawned it) is its spawning turn; a Weka subagent's recorded ``duration_ms`` is its recorded
end. A flat chain of a Weka trace (its rows flagged ``weka.chain``) is a flat stream of its
parent's scope (:class:`agentx.schedule.StreamSpec`), ending at the latest end of its requests,
as the harness ends it. Joins are then derived from the times
(:func:`agentx.schedule.with_joins`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentx.core.flags import WEKA_CHAIN, weka_values
from agentx.core.models import ExchangeMeta
from agentx.schedule import StreamSpec, TreeSpec, TurnSpec, with_joins
from agentx.workload.plan import SessionPlan

NS_PER_S = 1e9


def _turn(m: ExchangeMeta, t0_ns: int) -> TurnSpec:
    start = m.start_wall_ns - t0_ns
    return TurnSpec(start / NS_PER_S, (start + (m.e2e_ns or 0)) / NS_PER_S)


def _recorded_end_s(rows: Sequence[ExchangeMeta], t0_ns: int) -> float | None:
    """A Weka subagent's own end: its start plus its ``duration_ms`` (its first request starts
    when the subagent does in the published traces)."""
    found = weka_values(rows[0].flags, "duration_ms")
    if not found:
        return None
    try:
        duration_ms = float(found[0])
    except ValueError:
        return None
    return (rows[0].start_wall_ns - t0_ns) / NS_PER_S + duration_ms / 1000.0


def tree_of(session: SessionPlan) -> TreeSpec:
    """The schedule's tree of a planned session, from its rows' metadata alone (no body or
    block id is read)."""
    t0 = min(th.turns[0].meta.start_wall_ns for th in session.threads)
    streams = []
    for th in session.threads:
        rows = [turn.meta for turn in th.turns]
        parent, spawn = th.after if th.after is not None else (None, None)
        turns = tuple(_turn(m, t0) for m in rows)
        flat = parent is not None and bool(weka_values(rows[0].flags, WEKA_CHAIN))
        streams.append(
            StreamSpec(
                name=th.thread_id,
                turns=turns,
                parent=parent,
                spawn_turn=spawn,
                end_s=max(t.end_s for t in turns) if flat else _recorded_end_s(rows, t0),
                flat=flat,
            )
        )
    return TreeSpec(session.session_id, with_joins(streams))


def request_tree(session: SessionPlan) -> TreeSpec:
    """A session of one request (``--request-rate``, :mod:`agentx.replay.open_loop`) as a tree:
    that request alone, with no recorded wrap-up after it."""
    thread = session.threads[0]
    m = thread.turns[0].meta
    stream = StreamSpec(
        name=thread.thread_id,
        turns=(_turn(m, m.start_wall_ns),),
        parent=None,
        spawn_turn=None,
        end_s=None,
    )
    return TreeSpec(session.session_id, with_joins([stream]))
