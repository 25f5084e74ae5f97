"""Does the server fit the traffic? Its KV cache against the prompts a run sent.

A cache smaller than one prompt cannot keep any session's prefix between its turns; one smaller
than what the lanes hold at once evicts what the next turn needs. Either way the hit rate it
reports measures eviction, not reuse, and a reader must be told so, with the setting that would
change it (:func:`kv_fit_warning`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from agentx.core.record import RequestRecord

# a measured hit rate this far below the theoretical one, with a cache too small for the lanes'
# working set, is the cache's size speaking
EVICTION_GAP = 0.2


def _prompt(r: RequestRecord) -> int | None:
    return r.expected_prompt_tokens if r.expected_prompt_tokens is not None else r.prompt_tokens


def _advice(server_kind: str) -> str:
    if server_kind == "serve-sim":
        return (
            "agentx serve-sim --profile agentx (8M tokens of KV and a DRAM tier) or --kv-tokens N"
        )
    if server_kind == "vllm":
        return (
            "vLLM: a larger --gpu-memory-utilization, a KV offload tier (--kv-transfer-config), "
            "or fewer lanes (--concurrency)"
        )
    return "a larger KV cache on the server, or fewer lanes (--concurrency)"


def kv_fit_warning(
    kv_tokens: int | None,
    measured: Sequence[RequestRecord],
    lanes: int,
    measured_hit_rate: float | None,
    theoretical_hit_rate: float | None,
    server_kind: str,
) -> str | None:
    """A warning when the server's KV cache (``kv_tokens``, as its ``/metrics`` states it) is
    smaller than the largest prompt sent, or smaller than the lanes' working set (``lanes`` x the
    median prompt) while the hit rate measured falls far below the theoretical one."""
    if not kv_tokens:
        return None
    prompts = [p for r in measured if r.ok and (p := _prompt(r)) is not None]
    if not prompts:
        return None
    largest = max(prompts)
    if largest > kv_tokens:
        return (
            f"the server's KV cache holds {kv_tokens:,} tokens, less than the largest prompt "
            f"sent ({largest:,}): no session's prefix can stay cached between its turns, so its "
            f"hit rate measures eviction, not reuse; {_advice(server_kind)}"
        )
    working = lanes * int(statistics.median(prompts))
    if (
        working > kv_tokens
        and measured_hit_rate is not None
        and theoretical_hit_rate is not None
        and measured_hit_rate < theoretical_hit_rate - EVICTION_GAP
    ):
        return (
            f"the server's KV cache ({kv_tokens:,} tokens) is smaller than the {lanes} lanes' "
            f"working set (~{working:,} tokens: {lanes} x the median prompt): it served "
            f"{measured_hit_rate:.1%} from cache where an unbounded one would have served "
            f"{theoretical_hit_rate:.1%}; {_advice(server_kind)}"
        )
    return None
