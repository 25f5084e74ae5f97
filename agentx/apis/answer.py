"""The answer a serve-sim emitter renders, whatever the family: :class:`OutputPlan` (so many
tokens of filler, or one tool call) and the filler text it is cut from.

Filler is a fixed cycle of sentences built (per ``--seed``) from words that are one
cl100k_base token each, so every streamed chunk is exactly one token and re-tokenizing the
whole answer gives back ``completion_tokens``. What to answer, and how long, is serve-sim's
rule (:mod:`agentx.serve_sim.output`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import orjson

Finish = Literal["stop", "length", "tool"]

_WORDS = tuple(
    " " + w
    for w in (  # noqa: SIM905  (one line of prose reads better than 100 list items)
        "the of and to in is that for it as with was on be by this are at from or an but not "
        "have all which can one has its more new some time will also when they there about "
        "into only other than then these first may would over most such after where through "
        "many well each much those both under how very between system model data value cache "
        "block request token server number result state order table field line file code test "
        "path event point case process error page node memory queue batch stream load query"
    ).split()
)
_OPENERS = (" The", " A", " This", " In", " We", " Each", " It", " When", " For", " Then")
_CYCLE_SENTENCES = 256


@lru_cache(maxsize=16)
def filler_cycle(seed: int) -> tuple[str, ...]:
    """The repeating sequence of one-token pieces the filler is cut from (ends with ".")."""
    rng = np.random.default_rng(seed)
    pieces: list[str] = []
    for _ in range(_CYCLE_SENTENCES):
        pieces.append(_OPENERS[int(rng.integers(len(_OPENERS)))])
        length = int(rng.integers(6, 18))
        pieces.extend(_WORDS[int(i)] for i in rng.integers(0, len(_WORDS), size=length))
        pieces.append(".")
    return tuple(pieces)


@lru_cache(maxsize=16)
def escaped_cycle(seed: int) -> tuple[bytes, ...]:
    """The cycle's pieces JSON-escaped (without quotes), ready to splice into chunks."""
    return tuple(orjson.dumps(p)[1:-1] for p in filler_cycle(seed))


def filler_text(n_tokens: int, seed: int = 0) -> str:
    cycle = filler_cycle(seed)
    whole, rest = divmod(n_tokens, len(cycle))
    return "".join(cycle) * whole + "".join(cycle[:rest])


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text
    pieces: tuple[str, ...]  # ``arguments`` cut at token boundaries (one chunk per token)


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """The answer to produce: ``tokens`` chunks of filler, or one tool call."""

    tokens: int
    finish: Finish
    tool_call: ToolCall | None = None
