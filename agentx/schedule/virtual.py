"""Drive a :class:`~agentx.schedule.schedule.Schedule` on a virtual clock.

``run_virtual(schedule, service_s)`` plays a whole run instantly: every request takes
``service_s(send)`` seconds (a constant, a model of the server, a table), and the result is what
was sent, when, and when it ended. ``agentx simulate`` and the tests use it; ``agentx replay``
drives the same schedule with real time and HTTP (:mod:`agentx.replay.lanes`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from agentx.schedule.options import Phase, Send
from agentx.schedule.schedule import Schedule
from agentx.schedule.spec import TreeSpec


@dataclass(frozen=True, slots=True)
class Played:
    send: Send
    sent_s: float
    ended_s: float
    ok: bool


def run_virtual(
    schedule: Schedule,
    service_s: Callable[[Send], float],
    *,
    ok: Callable[[Send], bool] = lambda send: True,
    start_s: float = 0.0,
    until_s: float = float("inf"),
    supply: Callable[[int], TreeSpec | None] | None = None,
) -> list[Played]:
    """Run ``schedule`` to the end (or to ``until_s``, then stop it and drain). A schedule of
    trees on demand gets each tree it wants from ``supply(index)`` at once."""
    played: list[Played] = []
    ends: list[tuple[float, int, Send, float]] = []
    seq = itertools.count()
    now = start_s
    schedule.start(now)
    while True:
        while supply is not None and schedule.wanted:
            for index in schedule.wanted:
                schedule.provide(index, supply(index), now)
        for send in schedule.poll(now):
            heapq.heappush(ends, (now + max(0.0, service_s(send)), next(seq), send, now))
        if supply is not None and schedule.wanted:
            continue  # a lane took a tree not supplied yet (an arrival): supply it now
        if schedule.phase is Phase.BOUNDARY:
            schedule.begin_profiling(now)
            continue
        if schedule.done:
            return played
        due = schedule.next_due_s()
        end = ends[0][0] if ends else None
        if end is not None and (due is None or end <= due):
            now = max(now, end)
            _, _, send, sent = heapq.heappop(ends)
            good = ok(send)
            played.append(Played(send, sent, now, good))
            schedule.complete(send.id, now, good)
        elif due is not None:
            now = max(now, due)
        else:
            return played  # nothing due and nothing in flight: stuck (never by construction)
        if now > until_s and not schedule.stopped:
            schedule.stop(now)
