"""Hand-built trees and a recorded-time server for the schedule's tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentx.schedule import Schedule, ScheduleOptions, StreamSpec, TreeSpec, TurnSpec, with_joins
from agentx.schedule.virtual import Played, run_virtual


def stream(
    name: str,
    turns: Sequence[tuple[float, float]],
    *,
    parent: int | None = None,
    spawn: int | None = None,
    end_s: float | None = None,
    flat: bool = False,
) -> StreamSpec:
    return StreamSpec(
        name, tuple(TurnSpec(a, b) for a, b in turns), parent, spawn, None, end_s, flat
    )


def tree(tree_id: str, *streams: StreamSpec) -> TreeSpec:
    return TreeSpec(tree_id, with_joins(list(streams)))


def chain(tree_id: str, starts: Sequence[float], api_s: float = 1.0) -> TreeSpec:
    """One stream whose turns start at ``starts`` and each take ``api_s``."""
    return tree(tree_id, stream("main", [(t, t + api_s) for t in starts]))


def recorded(trees: Sequence[TreeSpec]) -> dict[str, TreeSpec]:
    return {t.tree_id: t for t in trees}


DRIVER = ("lanes", "seed", "arrivals", "recycle")  # what the driver gives Schedule itself


def schedule_of(trees: Sequence[TreeSpec] | int, **options: Any) -> Schedule:
    """A schedule of the options and of the driver's part (``lanes``, ``seed``, ``arrivals``,
    ``recycle``: off unless given, as the tests were written)."""
    driver = {k: options.pop(k) for k in DRIVER if k in options}
    driver.setdefault("recycle", False)
    return Schedule(trees, ScheduleOptions(**options), **driver)


def play(
    trees: Sequence[TreeSpec],
    *,
    service_s: float | None = None,
    until_s: float = float("inf"),
    **options: Any,
) -> tuple[Schedule, list[Played]]:
    """Run on a virtual clock; each request takes its recorded time (or ``service_s``)."""
    schedule = schedule_of(trees, **options)

    def service(send: object) -> float:
        if service_s is not None:
            return service_s
        t = trees[send.tree].streams[send.stream].turns[send.turn]  # type: ignore[attr-defined]
        return t.end_s - t.start_s

    return schedule, run_virtual(schedule, service, until_s=until_s)


def sends(played: Sequence[Played]) -> list[tuple[int, int, float]]:
    """(stream, turn, sent at) in send order, rounded to the microsecond."""
    return [(p.send.stream, p.send.turn, round(p.sent_s, 6)) for p in played]
