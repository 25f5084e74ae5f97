"""Trajectory snapshots: where in its recorded timeline a lane starts a tree, and what is history.

As agentx-harness (``trajectory_source.py``) does it:

- the instant ``t*`` is drawn uniformly in ``[start + MIN x span, start + MAX x span]``, where
  ``start``/``span`` are those of the *start* times of every request of the tree, with numpy's
  PCG64 generator seeded by ``sha256(f"{seed}:{tree_id}:{lane}")[:8]`` (big-endian), in
  milliseconds; so a lane on a given tree always draws the same ``t*`` for a given seed, and two
  lanes on the same tree draw different ones;
- every stream resumes at its first turn that starts at or after ``t*``; earlier turns are
  history, and the last of them is the stream's **primer** (sent during warm-up with its whole
  prefix). A stream without a turn at or after ``t*`` had finished;
- a child stream whose recorded start is after ``t*`` is live (spawned) only if its spawning turn
  had started before ``t*`` and is history; otherwise it waits to be spawned in the replay.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from agentx.schedule.options import ScheduleOptions
from agentx.schedule.spec import TreeSpec

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


def start_cut(tree: TreeSpec, options: ScheduleOptions, lane: int, *, first: bool) -> Split | None:
    """Where ``lane`` starts ``tree``: its first tree at the lane's sampled ``t*`` (with
    ``snapshot``), any other from its first request; ``None`` when nothing is left to replay
    after ``t*`` (the harness skips such a tree too)."""
    if not (first and options.snapshot):
        return fresh(tree)
    cut = split(tree, sample_t_star(tree, options.start_ratio, options.seed, lane))
    return cut if cut.live else None
