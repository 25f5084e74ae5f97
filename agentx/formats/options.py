"""``ReadOptions``: how a trace is read, the options of every command that reads one (``stats``,
``convert``, and ``replay``, ``sweep``, ``simulate`` through their workload), each declared as
its option."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agentx.core.options import Panel, coerce_choices, option


class FlatChains(StrEnum):
    """``--flat-chains``: whether a Weka trace's flat parallel agents become threads."""

    ON = "on"  # split, as agentx-harness splits them (agentx.formats.weka.flat)
    OFF = "off"  # every top-level request on the main thread, in file order


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How the trace's rows become sessions and threads."""

    flat_chains: FlatChains = option(
        FlatChains.ON,
        "--flat-chains",
        choices=FlatChains,
        panel=Panel.TRACE,
        help="Weka traces: split the parallel agents recorded among the main agent's requests "
        "into threads, as agentx-harness does (off: one main thread, in file order)",
    )

    def __post_init__(self) -> None:
        coerce_choices(self)

    @property
    def split(self) -> bool:
        """Whether flat parallel agents are split into threads."""
        return self.flat_chains is FlatChains.ON
