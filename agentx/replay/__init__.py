"""Replay: the asyncio load generator (``agentx replay``). See docs/replay.md.

from agentx.replay import ReplayOptions, run_replay
result = run_replay(ReplayOptions(trace=Path("t.parquet"), endpoint="http://127.0.0.1:8000"))
result.summary.cache.reported_hit_rate  # agentx.results.summary.Summary
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentx.core.record import RequestRecord
from agentx.replay.options import ReplayOptions

if TYPE_CHECKING:
    from agentx.replay.finish import ReplayResult
    from agentx.replay.run import run_replay

__all__ = ["ReplayOptions", "ReplayResult", "RequestRecord", "run_replay"]


def __getattr__(name: str) -> Any:
    """The load generator loads on first use, so the options stay light for the CLI."""
    if name == "run_replay":
        from agentx.replay.run import run_replay

        return run_replay
    if name == "ReplayResult":
        from agentx.replay.finish import ReplayResult

        return ReplayResult
    raise AttributeError(f"module 'agentx.replay' has no attribute {name!r}")
