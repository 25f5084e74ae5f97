"""What the schedule replays: trees of streams of turns, with their recorded times.

A **tree** is one recorded session (a Weka trace, an agentx session): its root stream (the main
agent) and every other stream (subagents, side threads). A **stream** is one linear sequence of
requests. Times are seconds on the tree's own recorded timeline (0 = its first request).

Spawn and join are derived from the recorded times, as agentx-harness derives them
(``weka_trace.py``): a child stream is spawned by one turn of its parent (``spawn_turn``; ``None``
= spawned with the tree) and **joins** the first later parent turn that started at or after the
child's recorded end (``join_turn``); a child that no later parent turn waits for runs in the
background.

A **flat** child is a chain of its parent's own requests (a parallel agent recorded among the
main agent's requests, :mod:`agentx.formats.weka.flat`): it is grouped apart from the subagents
spawned at the same turn, and shares its parent's **scope**. Within a scope, the recording
orders the streams (:func:`barriers`, the harness's ``replay_dependencies.py``): a request waits
for the latest request of each other stream of its scope that had ended before it started.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, replace

import numpy as np

from agentx.schedule.options import ScheduleOptions

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
    flat: bool = False  # a chain of its parent's own requests: its parent's scope

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
    """The earliest start of the children of ``c``'s kind (subagents, flat chains) spawned and
    joined at the same turns as ``c`` (the harness starts a group's first child right at its
    spawning turn's end)."""
    s = tree.streams[c]
    return min(
        o.start_s
        for o in tree.streams
        if o.parent == s.parent
        and o.spawn_turn == s.spawn_turn
        and o.join_turn == s.join_turn
        and o.flat == s.flat
    )


Turn = tuple[int, int]  # (stream, turn)
Barriers = dict[Turn, tuple[Turn, ...]]  # a turn -> the turns of other streams it waits for


def scope(tree: TreeSpec, i: int) -> int:
    """The stream whose scope stream ``i`` is in: its own, or (a flat chain) its parent's."""
    while tree.streams[i].flat and tree.streams[i].parent is not None:
        parent = tree.streams[i].parent
        assert parent is not None
        i = parent
    return i


def barriers(tree: TreeSpec) -> Barriers:
    """Per turn, the turns of other streams of its scope it waits for, as agentx-harness
    derives them (``infer_cross_stream_predecessors``): of each other stream, the latest turn
    (by end, then start, then index) that started before it and had ended by its start; then
    only those no other of them started after the end of. Turns without any are left out."""
    scopes: dict[int, list[int]] = {}
    for i in range(len(tree.streams)):
        scopes.setdefault(scope(tree, i), []).append(i)
    out: Barriers = {}
    for members in scopes.values():
        if len(members) < 2:
            continue
        # per stream: (end, start, turn) in order, and the ends alone (for bisect)
        ordered = {
            j: sorted((t.end_s, t.start_s, m) for m, t in enumerate(tree.streams[j].turns))
            for j in members
        }
        ends = {j: [e for e, _, _ in ordered[j]] for j in members}
        for i in members:
            for k, turn in enumerate(tree.streams[i].turns):
                at = turn.start_s
                frontier: list[tuple[float, float, int, int]] = []  # (end, start, stream, turn)
                for j in members:
                    if j == i:
                        continue
                    n = bisect.bisect_right(ends[j], at)
                    while n > 0 and not ordered[j][n - 1][1] < at:
                        n -= 1  # ended by its start, but did not start before it
                    if n:
                        end, start, m = ordered[j][n - 1]
                        frontier.append((end, start, j, m))
                kept = tuple(
                    sorted(
                        (j, m)
                        for end, start, j, m in frontier
                        if not any(
                            start < later[1] and end <= later[1]
                            for later in frontier
                            if later[2] != j
                        )
                    )
                )
                if kept:
                    out[(i, k)] = kept
    return out


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


# -- Trajectory snapshots --------------------------------------------------------------------------
# Trajectory snapshots: where in its recorded timeline a lane starts a tree, and what is history.
#
# As agentx-harness (``trajectory_source.py``) does it:
#
# - the instant ``t*`` is drawn uniformly in ``[start + MIN x span, start + MAX x span]``, where
#   ``start``/``span`` are those of the *start* times of every request of the tree, with numpy's
#   PCG64 generator seeded by ``sha256(f"{seed}:{tree_id}:{lane}")[:8]`` (big-endian), in
#   milliseconds; so a lane on a given tree always draws the same ``t*`` for a given seed, and two
#   lanes on the same tree draw different ones;
# - every stream resumes at its first turn that starts at or after ``t*``; earlier turns are
#   history, and the last of them is the stream's **primer** (sent during warm-up with its whole
#   prefix). A stream without a turn at or after ``t*`` had finished;
# - a child stream whose recorded start is after ``t*`` is live (spawned) only if its spawning turn
#   had started before ``t*`` and is history; otherwise it waits to be spawned in the replay.


MS_PER_S = 1000.0


def tree_seed(seed: int, tree_id: str, lane: int) -> int:
    """The harness's per-(trace, lane) seed: ``sha256(f"{seed}:{tree}:{lane}")``, 8 bytes."""
    digest = hashlib.sha256(f"{seed}:{tree_id}:{lane}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def sample_t_star(tree: TreeSpec, ratio: tuple[float, float], seed: int, lane: int) -> float:
    """The snapshot instant, in seconds on the tree's timeline."""
    start_ms = tree.start_s * MS_PER_S
    end_ms = tree.last_start_s * MS_PER_S
    span = end_ms - start_ms
    lo = start_ms + ratio[0] * span
    hi = max(lo, start_ms + ratio[1] * span)
    if hi == lo:
        return lo / MS_PER_S
    rng = np.random.default_rng(tree_seed(seed, tree.tree_id, lane))
    return float(rng.uniform(lo, hi)) / MS_PER_S


@dataclass(frozen=True, slots=True)
class Split:
    """A tree cut at ``t_star_s``: per stream, the first turn to replay (``None``: finished
    before ``t*``) and whether it is already spawned."""

    t_star_s: float
    next_turn: tuple[int | None, ...]
    spawned: tuple[bool, ...]

    def primer(self, stream: int) -> int | None:
        """The turn to warm for ``stream``: its last turn before ``t*`` (``None``: nothing)."""
        k = self.next_turn[stream]
        if k is None or k == 0 or not self.spawned[stream]:
            return None
        return k - 1

    @property
    def live(self) -> bool:
        """Whether anything can be sent (a tree with no live stream is skipped)."""
        return any(k is not None and sp for k, sp in zip(self.next_turn, self.spawned, strict=True))


def first_at_or_after(tree: TreeSpec, stream: int, t_s: float) -> int | None:
    for k, turn in enumerate(tree.streams[stream].turns):
        if turn.start_s >= t_s:
            return k
    return None


def split(tree: TreeSpec, t_star_s: float) -> Split:
    next_turn = [first_at_or_after(tree, i, t_star_s) for i in range(len(tree.streams))]
    spawned = []
    for s in tree.streams:
        if s.parent is None:
            spawned.append(True)  # the root, and streams spawned with the tree
        elif s.start_s <= t_star_s:
            spawned.append(True)  # it had started
        else:
            assert s.spawn_turn is not None
            parent_next = next_turn[s.parent]
            spawn_started = tree.streams[s.parent].turns[s.spawn_turn].start_s <= t_star_s
            sent = parent_next is None or parent_next > s.spawn_turn
            spawned.append(spawned[s.parent] and spawn_started and sent)
    return Split(t_star_s, tuple(next_turn), tuple(spawned))


def fresh(tree: TreeSpec) -> Split:
    """A tree started from its first request (no snapshot): nothing is history, and only the
    streams without a parent are spawned."""
    n = len(tree.streams)
    return Split(tree.start_s, (0,) * n, tuple(s.parent is None for s in tree.streams))


def start_cut(
    tree: TreeSpec, options: ScheduleOptions, lane: int, seed: int, *, first: bool
) -> Split | None:
    """Where ``lane`` starts ``tree``: its first tree at the lane's sampled ``t*`` (with
    ``snapshot``), any other from its first request; ``None`` when nothing is left to replay
    after ``t*`` (the harness skips such a tree too)."""
    if not (first and options.snapshot):
        return fresh(tree)
    cut = split(tree, sample_t_star(tree, options.start_ratio, seed, lane))
    return cut if cut.live else None
