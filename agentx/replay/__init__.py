"""Replay: the asyncio load generator (``agentx replay``). See docs/replay.md.

from agentx.replay import ReplayOptions, run_replay
result = run_replay(ReplayOptions(trace=Path("t.parquet"), endpoint="http://127.0.0.1:8000"))
result.summary["cache"]["reported_hit_rate"]
"""

from agentx.core.record import RequestRecord
from agentx.replay.finish import ReplayResult
from agentx.replay.options import ReplayOptions
from agentx.replay.run import run_replay

__all__ = ["ReplayOptions", "ReplayResult", "RequestRecord", "run_replay"]
