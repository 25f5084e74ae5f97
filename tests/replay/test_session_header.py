"""replay --session-header against a server-side router (serve-sim --replicas 2 --router),
over real sockets: every preset keeps a tree on one replica, so the cache hits what the
router's stickiness allows; without it the router spreads a tree's turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.replay import ReplayOptions, run_replay
from agentx.routing import Route
from agentx.serve_sim import SimConfig, SimServer

EXAMPLE = example_path("example")
FAST = {"prefill_tps": 2e6, "decode_tps": 2e4, "overhead_ms": 0.5, "batch_slowdown": 0.0}


# Four replicas, not two: with two, round-robin sends every other turn of a tree to the replica
# that holds the turn before last, so the spread run's hit rate sits within a few points of the
# sticky one and the interleaving of two lanes decides which side of a margin it falls.
REPLICAS = 4


def replay(tmp_path: Path, router: Route, preset: str | None) -> dict[str, Any]:
    cfg = SimConfig.of(port=0, replicas=REPLICAS, router=router, kv_tokens=1 << 20, **FAST)
    with SimServer(cfg) as srv:
        return run_replay(
            ReplayOptions.of(
                trace=EXAMPLE,
                endpoint=srv.url,
                concurrency=2,
                time_scale=0.0,
                session_header=preset,
                output_dir=tmp_path / f"out-{router}-{preset}",
                progress=False,
            )
        ).summary.to_json()


@pytest.mark.parametrize(
    ("preset", "router"),
    [
        ("vllm-router", Route.SESSION),
        ("dynamo", Route.SESSION),
        ("smg", Route.SESSION),
        ("llm-d", Route.ROUND_ROBIN),  # the token echoed back pins the tree, whatever the policy
    ],
)
def test_each_preset_keeps_trees_together_behind_the_router(
    tmp_path: Path, preset: str, router: Route
) -> None:
    spread = replay(tmp_path, router, None)["cache"]["reported_hit_rate"]
    summary = replay(tmp_path, router, preset)
    sticky = summary["cache"]["reported_hit_rate"]
    assert summary["requests"]["errors"] == 0
    assert sticky > spread + 0.15, (sticky, spread)
    assert summary["config"]["session_header"] == preset


def test_without_the_flag_the_config_keeps_its_keys(tmp_path: Path) -> None:
    o = ReplayOptions.of(trace=EXAMPLE, endpoint="http://127.0.0.1:9")
    assert "session_header" not in o.config()
    custom = ReplayOptions.of(
        trace=EXAMPLE, endpoint="http://127.0.0.1:9", session_header="X-Affinity"
    )
    assert custom.config()["session_header"] == "x-affinity"
    with pytest.raises(UsageError, match="--session-header"):
        ReplayOptions.of(trace=EXAMPLE, endpoint="http://127.0.0.1:9", session_header="a b")
