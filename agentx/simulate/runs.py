"""Runs of consecutive dense block ids: how a request's ids are kept between uses.

The renumbering (:class:`agentx.simulate.dense.Renumberer`) gives the blocks a request
appends the next ids in order, and a prefix shared with earlier requests was numbered the same
way when it was first seen, so a request's ids are a few runs (a few per turn of its thread,
not one per block): the first id and the end of each run are all that is kept (~0.2M runs for
the 95M block ids of a 6e9-token corpus's requests), and the ids are rebuilt where they are
used.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

Runs = npt.NDArray[np.int32]  # shape (2, runs): each run's first id, and its end in the prompt
BlockIds = npt.NDArray[np.int64]  # what the engines index their arrays with
FEW_RUNS = 16


def id_runs(ids: npt.NDArray[np.int32]) -> Runs:
    """The runs of consecutive ids in ``ids`` (int32, below 2**31): row 0 each run's first id,
    row 1 the position after its last one."""
    n = int(ids.size)
    if not n:
        return np.zeros((2, 0), dtype=np.int32)
    step = ids[1:] - ids[:-1]  # (np.diff's checks cost more than the subtraction here)
    cut = np.flatnonzero(step != 1)
    cut += 1
    out = np.empty((2, cut.size + 1), dtype=np.int32)
    out[0, 0] = ids[0]
    out[0, 1:] = ids[cut]
    out[1, :-1] = cut
    out[1, -1] = n
    return out


def run_ids(runs: Runs) -> BlockIds:
    """The ids :func:`id_runs` was given, as int64 (the engines' index type: no copy there)."""
    r = int(runs.shape[1])
    if r <= FEW_RUNS:  # a prompt's usual few: one slice each beats the vectorised form's calls
        firsts, ends = runs.tolist()
        out = np.empty(ends[-1] if r else 0, dtype=np.int64)
        at = 0
        for first, end in zip(firsts, ends, strict=True):
            out[at:end] = np.arange(first, first + end - at)
            at = end
        return out
    ends = runs[1].astype(np.int64)
    lengths = np.diff(ends, prepend=0)
    out = np.arange(int(ends[-1]), dtype=np.int64)  # position in the prompt
    out += np.repeat(runs[0].astype(np.int64) - (ends - lengths), lengths)
    return out


def run_facts(runs: Runs) -> tuple[int, bool]:
    """The largest id the runs hold (0 for none), and whether no id occurs twice (the runs'
    ranges of ids do not overlap)."""
    r = int(runs.shape[1])
    if not r:
        return 0, True
    if r <= FEW_RUNS:
        firsts, ends = runs.tolist()
        spans = sorted(
            (first, first + end - at)
            for first, end, at in zip(firsts, ends, [0, *ends[:-1]], strict=True)
        )
        top = max(stop for _, stop in spans) - 1
        return top, all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    ends = runs[1].astype(np.int64)
    lengths = np.diff(ends, prepend=0)
    firsts = runs[0].astype(np.int64)
    order = np.argsort(firsts, kind="stable")
    stops = (firsts + lengths)[order]
    return int(stops.max()) - 1, bool((firsts[order][1:] >= stops[:-1]).all())


def run_blocks(runs: Runs) -> int:
    """How many ids the runs hold."""
    return int(runs[1, -1]) if runs.shape[1] else 0
