"""Flat parallel agents: a Weka trace's top-level requests split into the main agent and the
agents recorded among its requests, as agentx-harness 1.0.12 splits them.

Ported from agentx-harness 1.0.12 (``aiperf/dataset/loader/weka_trace.py``:
``_detect_and_split_flat_chains``, ``_split_off_preamble``, ``_worker_suffix``; and
``weka_agent_chains.py``: ``is_aux_chain``, ``is_reduction_chain``, ``worker_group_assignment``;
NVIDIA, Apache-2.0), with the harness's default settings. The chains are found by
:mod:`agentx.formats.weka.chains`; then:

- a leading **preamble** (the earliest request, sharing no prefix with any other: a title
  generation with at most 64 output tokens, or one whose blocks never recur) is set aside before
  the detection and put back on the main chain;
- the **main** chain is the one of the first (other) request; every other live chain is, in this
  order of precedence: a **sidecar** (one request, on another model than the main chain's first,
  or starting from fewer tokens than ``max(16384, 10 % of the main chain's largest prompt)``), a
  **reduction** (one request of at least 16384 tokens with an answer in ``(0, 4000)`` tokens and
  more than 20 input tokens per output token), a **worker** (one of at least 3 chains forked off
  the same request with shared context and running concurrently), else an **agent**;
- chains are named as the harness names their conversations: ``fa:NNN`` (agent), ``aux:NNN``
  (sidecar or reduction), ``wg:GGG_MMM`` (group, member), ``NNN`` being the chain's rank among
  the non-main chains by first request.

A trace without another live chain is left as it is (its seams are then not counted, as the
harness counts none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from agentx.formats.weka.chains import ChainRequest, Detection, Ids, detect, worker_groups

TITLE_MAX_OUTPUT = 64  # a preamble this short is a title generation
SIDECAR_MAX_REQUESTS = 1  # WEKA_AUX_MAX_REQUESTS
SIDECAR_ISL_RATIO = 0.10  # WEKA_AUX_ISL_RATIO
SIDECAR_ISL_FLOOR = 16384  # WEKA_AUX_ISL_FLOOR
REDUCTION_OSL_MAX = 4000  # WEKA_AUX_REDUCTION_OSL_MAX
REDUCTION_RATIO = 20.0  # WEKA_AUX_REDUCTION_RATIO
WORKER_GROUP_MIN = 3  # WEKA_WORKER_GROUP_MIN


class ChainKind(StrEnum):
    """What a non-main chain is (the ``weka.chain`` flag of its rows)."""

    AGENT = "agent"  # a solo agent: fa:NNN
    SIDECAR = "sidecar"  # a tool's one-shot call: aux:NNN
    REDUCTION = "reduction"  # a large-input, short-output one-shot (a summary): aux:NNN
    WORKER = "worker"  # a member of a parallel fan-out: wg:GGG_MMM


@dataclass(frozen=True, slots=True)
class FlatChain:
    """One non-main chain: its name, its kind and its requests' positions, in turn order."""

    name: str
    kind: ChainKind
    positions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FlatSplit:
    """A trace's top-level requests split: the main chain's positions in turn order, the other
    chains, the seams spliced and the requests without block ids kept on the main chain."""

    main: tuple[int, ...]
    chains: tuple[FlatChain, ...]
    seams: int
    empty: int


def _shares_prefix(a: Ids, b: Ids) -> bool:
    return bool(a.shape[0] and b.shape[0] and a[0] == b[0])


def split_preamble(
    requests: Sequence[ChainRequest],
) -> tuple[list[ChainRequest], list[ChainRequest]]:
    """``(preamble, rest)``: the earliest request set aside when it shares no prefix with any
    other and either answers in at most 64 tokens or has no block that recurs; else ``([],
    requests)``."""
    if len(requests) < 2:
        return [], list(requests)
    ordered = sorted(requests, key=lambda r: (r.t, r.position))
    first, rest = ordered[0], ordered[1:]
    if not first.ids.shape[0]:
        return [], list(requests)
    if any(_shares_prefix(first.ids, r.ids) for r in rest):
        return [], list(requests)
    if first.n_out > TITLE_MAX_OUTPUT:
        others = np.concatenate([r.ids for r in rest]) if rest else first.ids[:0]
        if np.isin(first.ids, others).any():
            return [], list(requests)
    return [first], sorted(rest, key=lambda r: r.position)


def is_sidecar(chain: Sequence[ChainRequest], main_peak_in: int, main_model: str | None) -> bool:
    """A short chain on another model, or starting from a small fresh context."""
    if not chain or len(chain) > SIDECAR_MAX_REQUESTS:
        return False
    first = chain[0]
    if main_model is not None and first.model != main_model:
        return True
    return first.n_in < max(SIDECAR_ISL_FLOOR, int(SIDECAR_ISL_RATIO * main_peak_in))


def is_reduction(chain: Sequence[ChainRequest]) -> bool:
    """One request consuming a large body and answering briefly."""
    if len(chain) != 1:
        return False
    first = chain[0]
    if first.n_out <= 0 or first.n_out >= REDUCTION_OSL_MAX or first.n_in < SIDECAR_ISL_FLOOR:
        return False
    return first.n_in > REDUCTION_RATIO * first.n_out


def _name(n: int, kind: ChainKind, group: tuple[int, int] | None) -> str:
    if kind in (ChainKind.SIDECAR, ChainKind.REDUCTION):
        return f"aux:{n:03d}"
    if group is not None:
        return f"wg:{group[0]:03d}_{group[1]:03d}"
    return f"fa:{n:03d}"


def split_flat(requests: Sequence[ChainRequest]) -> FlatSplit | None:
    """The split of a trace's top-level requests, ``None`` when there is only one agent."""
    if len(requests) < 2:
        return None
    preamble, rest = split_preamble(requests)
    d: Detection = detect(rest)
    if not d.workers:
        return None
    main = d.chains[d.main].requests
    main_peak = max((r.n_in for r in main), default=0)
    main_model = main[0].model if main else None
    groups = worker_groups(d, group_min=WORKER_GROUP_MIN)
    chains = []
    for n, i in enumerate(d.workers):
        reqs = d.chains[i].requests
        if is_sidecar(reqs, main_peak, main_model):
            kind = ChainKind.SIDECAR
        elif is_reduction(reqs):
            kind = ChainKind.REDUCTION
        else:
            kind = ChainKind.WORKER if i in groups else ChainKind.AGENT
        group = groups.get(i) if kind is ChainKind.WORKER else None
        chains.append(FlatChain(_name(n, kind, group), kind, tuple(r.position for r in reqs)))
    order = list(main)
    if preamble:
        order = sorted(preamble + order, key=lambda r: (r.t, r.position))
    return FlatSplit(tuple(r.position for r in order), tuple(chains), d.seams, d.empty)
