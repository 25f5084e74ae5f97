"""``agentx simulate``: the offline KV-cache simulator (hit rate vs cache capacity, GPU-only vs
GPU + DRAM offload). See docs/simulate.md for the model.

    from agentx.simulate import SimulateOptions, run_simulate
    result = run_simulate(SimulateOptions(Path("t.parquet"), capacities_tokens=(160_000,),
                                          offload_tokens=2_000_000))
    result.data.points  # the agentx.simulate/1 object (agentx.results.simulate)

Layout: :mod:`.workload` (trace -> requests in start order, dense block ids),
:mod:`.stack` (the one-pass LRU stack engine and the :class:`agentx.prefixcache.kvcache.KVCache` replay),
:mod:`.run` (options, capacity lists, the result), :mod:`.render` (table, SVG).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentx.core.options import parse_tokens
from agentx.results.simulate import SCHEMA
from agentx.simulate.options import (
    SimulateOptions,
    default_capacities,
    parse_count_list,
    parse_token_list,
)

if TYPE_CHECKING:
    from agentx.simulate.render import check_plot, plot_svg, render_table, write_plot
    from agentx.simulate.run import SimulateResult, run_simulate, simulate_workload
    from agentx.simulate.workload import Workload, load_workload

__all__ = [
    "SCHEMA",
    "SimulateOptions",
    "SimulateResult",
    "Workload",
    "check_plot",
    "default_capacities",
    "load_workload",
    "parse_count_list",
    "parse_token_list",
    "parse_tokens",
    "plot_svg",
    "render_table",
    "run_simulate",
    "simulate_workload",
    "write_plot",
]

# the simulators (numpy-heavy) load on first use, so the options stay light for the CLI
_LAZY = {
    "check_plot": "render",
    "plot_svg": "render",
    "render_table": "render",
    "write_plot": "render",
    "SimulateResult": "run",
    "run_simulate": "run",
    "simulate_workload": "run",
    "Workload": "workload",
    "load_workload": "workload",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"agentx.simulate.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'agentx.simulate' has no attribute {name!r}")
