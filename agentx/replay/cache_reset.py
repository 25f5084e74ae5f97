"""Ask the server under test to drop its prefix cache (``--reset-cache``; ``sweep`` between levels).

A run that finds the cache warm from an earlier run measures that run too. Servers that allow a
reset, by their own endpoints:

- vLLM: ``POST /reset_prefix_cache?reset_external=true`` (also the KV connector's offload tier),
  answering ``{"success": bool}``; mounted only when the server runs with
  ``VLLM_SERVER_DEV_MODE=1`` (404 otherwise). ``success`` is false while requests still hold
  blocks, so agentx retries a few times.
- SGLang: ``POST /flush_cache`` (200 when flushed, 400 while requests run).
- serve-sim: both of the above.

When no endpoint works the run goes on and its summary carries a warning saying so. A run over
several replicas resets each one (:func:`all_reset`): a replica left warm would make the
replicas' figures, and a sweep's levels, incomparable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import orjson

VLLM_RESET = "/reset_prefix_cache?reset_external=true"
SGLANG_FLUSH = "/flush_cache"
ATTEMPTS = 5
RETRY_S = 0.5

# server kind (replay/endpoint.py) -> endpoints to try, in order
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "vllm": (VLLM_RESET,),
    "sglang": (SGLANG_FLUSH,),
    "serve-sim": (VLLM_RESET,),
}
HOW_TO: dict[str, str] = {
    "vllm": "start vLLM with VLLM_SERVER_DEV_MODE=1 to allow POST /reset_prefix_cache",
    "sglang": "SGLang refused POST /flush_cache",
}


@dataclass(frozen=True, slots=True)
class CacheReset:
    ok: bool
    endpoint: str | None  # the path that reset it
    message: str  # why it did not, or what did it


async def _try(client: httpx.AsyncClient, url: str) -> tuple[bool | None, str]:
    """``True`` reset, ``False`` refused for now (retry), ``None`` not there (give up)."""
    try:
        resp = await client.post(url, timeout=httpx.Timeout(30.0))
    except (httpx.HTTPError, OSError) as exc:
        return None, f"{type(exc).__name__}"
    if resp.status_code in (404, 405, 501):
        return None, f"HTTP {resp.status_code}"
    if resp.status_code == 400:  # SGLang: requests are running
        return False, "HTTP 400 (requests still running)"
    if resp.status_code != 200:
        return None, f"HTTP {resp.status_code}"
    try:
        body = orjson.loads(resp.content) if resp.content else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("success") is False:
        return False, "the server reported success=false (blocks still in use)"
    return True, "ok"


async def reset_prefix_cache(client: httpx.AsyncClient, root_url: str, kind: str) -> CacheReset:
    """Reset the prefix cache of the server at ``root_url`` (its kind decides the endpoint)."""
    paths = ENDPOINTS.get(kind, (VLLM_RESET, SGLANG_FLUSH))
    why = []
    for path in paths:
        for attempt in range(ATTEMPTS):
            done, message = await _try(client, root_url + path)
            if done:
                return CacheReset(True, path.split("?")[0], f"POST {path}")
            if done is None or attempt == ATTEMPTS - 1:
                why.append(f"POST {path.split('?')[0]}: {message}")
                break
            await asyncio.sleep(RETRY_S)
    hint = HOW_TO.get(kind, "the server offers no known cache-reset endpoint")
    return CacheReset(False, None, f"{'; '.join(why)} ({hint})")


def all_reset(resets: Sequence[CacheReset]) -> CacheReset:
    """Several replicas' resets (in replica order) as one: ok when every replica's was, the
    path the first used, and which replica could not and why."""
    failed = [f"replica {i}: {r.message}" for i, r in enumerate(resets) if not r.ok]
    if not failed:
        return CacheReset(True, resets[0].endpoint if resets else None, resets[0].message)
    done = next((r.endpoint for r in resets if r.ok), None)
    return CacheReset(False, done, "; ".join(failed))
