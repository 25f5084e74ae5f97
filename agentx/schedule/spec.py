"""What the schedule replays: trees of streams of turns, with their recorded times.

A **tree** is one recorded session (a Weka trace, an agentx session): its root stream (the main
agent) and every other stream (subagents, side threads). A **stream** is one linear sequence of
requests. Times are seconds on the tree's own recorded timeline (0 = its first request).

Spawn and join are derived from the recorded times, as agentx-harness derives them
(``weka_trace.py``): a child stream is spawned by one turn of its parent (``spawn_turn``; ``None``
= spawned with the tree) and **joins** the first later parent turn that started at or after the
child's recorded end (``join_turn``); a child that no later parent turn waits for runs in the
background.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

JOIN_EPSILON_S = 1e-6  # the harness's tolerance: a turn starting at the child's end joins it


@dataclass(frozen=True, slots=True)
class TurnSpec:
    start_s: float  # recorded start
    end_s: float  # recorded end (start + server time; = start when unknown)


@dataclass(frozen=True, slots=True)
class StreamSpec:
    name: str  # the thread id (for rows and request building)
    turns: tuple[TurnSpec, ...]
    parent: int | None = None  # index of the parent stream; None for the root
    spawn_turn: int | None = None  # parent turn whose completion spawns this stream
    join_turn: int | None = None  # parent turn that waits for this stream; None: background
    end_s: float | None = None  # recorded end of the stream (>= its last turn's end)

    @property
    def start_s(self) -> float:
        return self.turns[0].start_s

    @property
    def finish_s(self) -> float:
        """The recorded end: ``end_s`` when the trace says it (a Weka subagent's duration),
        else the end of its last turn."""
        last = self.turns[-1].end_s
        return last if self.end_s is None else max(self.end_s, last)


@dataclass(frozen=True, slots=True)
class TreeSpec:
    tree_id: str  # the session / trace id (it seeds the snapshot instant)
    streams: tuple[StreamSpec, ...]  # [0] is the root

    @property
    def start_s(self) -> float:
        return min(s.start_s for s in self.streams)

    @property
    def last_start_s(self) -> float:
        return max(t.start_s for s in self.streams for t in s.turns)

    @property
    def requests(self) -> int:
        return sum(len(s.turns) for s in self.streams)

    def children(self, parent: int) -> list[int]:
        return [i for i, s in enumerate(self.streams) if s.parent == parent]

    def blockers(self, stream: int, turn: int) -> list[int]:
        """The child streams turn ``turn`` of ``stream`` waits for (its join)."""
        return [i for i, s in enumerate(self.streams) if s.parent == stream and s.join_turn == turn]


def join_turn(parent: StreamSpec, spawn_turn: int | None, child_end_s: float) -> int | None:
    """The first parent turn after ``spawn_turn`` that started at or after the child's end."""
    first = 0 if spawn_turn is None else spawn_turn + 1
    for k in range(first, len(parent.turns)):
        if parent.turns[k].start_s + JOIN_EPSILON_S >= child_end_s:
            return k
    return None


def with_joins(streams: list[StreamSpec]) -> tuple[StreamSpec, ...]:
    """``streams`` with every child's ``join_turn`` derived from the recorded times."""
    out = []
    for s in streams:
        if s.parent is None:
            out.append(replace(s, join_turn=None))
        else:
            out.append(replace(s, join_turn=join_turn(streams[s.parent], s.spawn_turn, s.finish_s)))
    return tuple(out)


Blockers = dict[tuple[int, int], tuple[int, ...]]  # (parent stream, join turn) -> child streams


def index_blockers(tree: TreeSpec) -> Blockers:
    out: dict[tuple[int, int], list[int]] = {}
    for c, s in enumerate(tree.streams):
        if s.parent is not None and s.join_turn is not None:
            out.setdefault((s.parent, s.join_turn), []).append(c)
    return {k: tuple(v) for k, v in out.items()}


def group_start(tree: TreeSpec, c: int) -> float:
    """The earliest start of the children spawned and joined at the same turns as ``c`` (the
    harness starts a group's first child right at its spawning turn's end)."""
    s = tree.streams[c]
    return min(
        o.start_s
        for o in tree.streams
        if o.parent == s.parent and o.spawn_turn == s.spawn_turn and o.join_turn == s.join_turn
    )


def check_tree(tree: TreeSpec) -> None:
    """A tree the schedule can run: a root first, parents before children, turns in order."""
    if not tree.streams or tree.streams[0].parent is not None:
        raise ValueError(f"tree {tree.tree_id}: the first stream must be the root")
    for i, s in enumerate(tree.streams):
        if not s.turns:
            raise ValueError(f"tree {tree.tree_id}: stream {s.name} has no turns")
        if s.parent is not None:
            if not 0 <= s.parent < i or s.spawn_turn is None:
                raise ValueError(f"tree {tree.tree_id}: stream {s.name} has a bad parent")
            if not 0 <= s.spawn_turn < len(tree.streams[s.parent].turns):
                raise ValueError(f"tree {tree.tree_id}: stream {s.name} has a bad spawn turn")
