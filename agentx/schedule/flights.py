"""The requests in flight: each :class:`Send` the driver was told, with its tree, until the
driver reports its end."""

from __future__ import annotations

import itertools

from agentx.schedule.events import Send
from agentx.schedule.state import TreeRun


class Flights:
    def __init__(self) -> None:
        self._ids = itertools.count()
        self._flight: dict[int, tuple[Send, TreeRun]] = {}
        self.count = 0  # requests in flight
        self.measured = 0  # measured (not warm-up) requests sent so far

    def send(
        self,
        tree: TreeRun,
        stream: int,
        turn: int,
        due_s: float,
        *,
        warmup: bool,
        primer: bool,
        max_tokens: int | None,
    ) -> Send:
        """A new request of turn ``turn`` of ``stream`` of ``tree``, in flight from now."""
        send = Send(
            id=next(self._ids),
            lane=tree.lane,
            tree=tree.index,
            copy=tree.copy,
            instance=tree.instance,
            stream=stream,
            turn=turn,
            due_s=due_s,
            warmup=warmup,
            primer=primer,
            max_tokens=max_tokens,
        )
        self._flight[send.id] = (send, tree)
        self.count += 1
        tree.in_flight += 1
        if not warmup:
            self.measured += 1
        return send

    def ended(self, send_id: int) -> tuple[Send, TreeRun]:
        """Request ``send_id`` is no longer in flight: it and its tree."""
        send, tree = self._flight.pop(send_id)
        self.count -= 1
        tree.in_flight -= 1
        return send, tree
