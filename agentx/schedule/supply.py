"""Trees on demand: which tree each waiting lane takes next, and which of those the driver has
still to supply.

Lanes that want a tree queue up (:class:`Waiting`) and are served in the order they asked, in
trace order (wrapping with ``recycle``), while the next tree is known; a tree not supplied yet
holds the queue until :meth:`TreeSupply.provide`, so the order is the one of the same trees
given up front. A tree supplied as ``None`` has nothing to replay: the lane takes the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentx.schedule.spec import TreeSpec, check_tree
from agentx.schedule.state import Waiting


class TreeSupply:
    """The trees supplied so far and the lanes waiting for one."""

    def __init__(self, trees: Sequence[TreeSpec] | int, *, recycle: bool) -> None:
        self.trees: dict[int, TreeSpec | None] = {}  # supplied so far (None: nothing to replay)
        if isinstance(trees, int):
            self.count = trees
        else:
            self.count = len(trees)
            for i, tree in enumerate(trees):
                check_tree(tree)
                self.trees[i] = tree
        self.recycle = recycle
        self.waiting: list[Waiting] = []  # lanes waiting for a tree, in the order they asked
        self._cursor = 0  # trees taken so far (copies included)
        self._tries = 0  # trees the first waiting lane skipped (nothing to replay in them)

    def wanted(self) -> list[int]:
        """The trees the waiting lanes will take next that are not supplied yet."""
        n = self.count
        if not self.waiting or n == 0:
            return []
        c = self._cursor
        end = c + len(self.waiting) if self.recycle else min(c + len(self.waiting), n)
        return list(dict.fromkeys(p % n for p in range(c, end) if p % n not in self.trees))

    def provide(self, index: int, tree: TreeSpec | None) -> None:
        if tree is not None:
            check_tree(tree)
        self.trees[index] = tree

    def serve(self, start: Callable[[Waiting, int, int], bool], *, stopped: bool) -> None:
        """Give the waiting lanes their trees while the next tree is known: ``start(waiting,
        index, copy)`` starts tree ``index`` (its ``copy``-th instance) on the lane, or says
        there is nothing to replay in it (the lane then tries the next one). A lane for which
        no tree is left is marked idle."""
        n = self.count
        while self.waiting:
            w = self.waiting[0]
            if n == 0 or stopped or (self._cursor >= n and not self.recycle) or self._tries >= n:
                w.lane.idle = True  # no tree left for it
                self.waiting.pop(0)
                self._tries = 0
                continue
            index, copy = self._cursor % n, self._cursor // n
            if index not in self.trees:
                return  # wanted: the driver supplies it
            self._cursor += 1
            self._tries += 1
            if start(w, index, copy):
                self.waiting.pop(0)
                self._tries = 0
