"""``agentx stats``: the shape of a trace (sessions, threads, tokens, think time) and the prefix-cache
hit rate an unbounded cache would reach on it.

Only model calls count: rows whose ``api`` is one of :data:`agentx.models.MODEL_APIS` and that
are not flagged :data:`NON_MODEL_FLAG`. Input tokens are the server's ``usage.prompt_tokens``
where it reported them, else agentx's tiktoken count of the rendered request.

The theoretical hit rate replays every request, in trace order, against an unbounded block cache
(:class:`agentx.prefix.UnboundedPrefixCache`, vLLM's rules). Text rows are hashed from their
rendered tokens at ``block_size`` (incrementally, so a long session costs its unique content);
hash-only rows (Weka, Mooncake) use their own ``hash_ids`` at their own block size, or at a
multiple of it when ``block_size`` is one. The block size actually used is reported.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

import numpy as np

from agentx import tokens
from agentx.models import MODEL_APIS, Exchange
from agentx.prefix import (
    DEFAULT_BLOCK_SIZE,
    HashArray,
    RequestHasher,
    UnboundedPrefixCache,
    chain_ids,
)

SCHEMA = "agentx.stats/1"
NON_MODEL_FLAG = "non_model"  # set by capture on traffic that is not a model call


class Percentiles(TypedDict):
    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    max: float | None


def percentiles(values: Sequence[float]) -> Percentiles:
    """p50/p90/p99 (linear interpolation), mean and max; all ``None`` for no values."""
    if not values:
        return Percentiles(p50=None, p90=None, p99=None, mean=None, max=None)
    arr = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = (float(x) for x in np.percentile(arr, [50, 90, 99]))
    return Percentiles(p50=p50, p90=p90, p99=p99, mean=float(arr.mean()), max=float(arr.max()))


def is_model_call(ex: Exchange) -> bool:
    return ex.api in MODEL_APIS and NON_MODEL_FLAG not in ex.flags


def _output_tokens(ex: Exchange) -> int | None:
    if ex.usage.completion_tokens is not None:
        return ex.usage.completion_tokens
    r = ex.response
    parts = [p for p in (r.text, r.reasoning) if p]
    parts.extend(
        str(c.get("arguments", "")) if isinstance(c, dict) else str(c) for c in r.tool_calls
    )
    if not parts:
        return None  # nothing known about the answer: unknown, not 0
    return sum(tokens.count_tokens(p) for p in parts)


def hash_only_blocks(ex: Exchange, requested: int | None) -> tuple[HashArray, int, int]:
    """``(chained block hashes, prompt tokens, block size)`` of a hash-only row (Weka, Mooncake).

    The row's own ``hash_block_size`` is used, or a multiple of it when ``requested`` is one
    (the blocks are coarsened exactly by :func:`agentx.prefix.chain_ids`). Shared with
    ``agentx simulate``, so both count the same blocks.
    """
    ids = ex.hash_ids or ()
    native = ex.hash_block_size or 1
    group = 1
    if requested is not None and requested % native == 0:
        group = requested // native
    n = ex.usage.prompt_tokens
    if n is None:
        n = len(ids) * native
    full = min(len(ids), n // native)  # a last partial block (Mooncake) is never cached
    return chain_ids(ids[:full], group), n, native * group


class _HitCounter:
    """Unbounded caches, one per block size in use, fed in trace order."""

    def __init__(self, text_block_size: int, requested: int | None) -> None:
        self.text_block_size = text_block_size
        self.requested = requested
        self.hasher = RequestHasher(text_block_size)
        self.caches: dict[int, UnboundedPrefixCache] = {}
        self.requests: Counter[int] = Counter()

    def _cache(self, bs: int) -> UnboundedPrefixCache:
        cache = self.caches.get(bs)
        if cache is None:
            cache = self.caches[bs] = UnboundedPrefixCache(bs)
        return cache

    def text(self, ex: Exchange) -> int:
        """Feed a text row; returns its rendered token count."""
        hashes, n = self.hasher.hash_request(ex.api, ex.request, (ex.session_id, ex.thread_id))
        self._cache(self.text_block_size).observe(hashes, n)
        self.requests[self.text_block_size] += 1
        return n

    def hashed(self, ex: Exchange, ids: tuple[int, ...], native: int) -> None:
        hashes, n, bs = hash_only_blocks(ex, self.requested)
        self._cache(bs).observe(hashes, n)
        self.requests[bs] += 1

    def result(self) -> tuple[float | None, int, dict[str, dict[str, int]]]:
        prompt = sum(c.prompt_tokens for c in self.caches.values())
        hits = sum(c.hit_tokens for c in self.caches.values())
        per = {
            str(bs): {
                "requests": self.requests[bs],
                "prompt_tokens": c.prompt_tokens,
                "hit_tokens": c.hit_tokens,
            }
            for bs, c in sorted(self.caches.items())
        }
        main = (
            max(self.caches.items(), key=lambda kv: kv[1].prompt_tokens)[0]
            if self.caches
            else self.text_block_size
        )
        return (hits / prompt if prompt else None), main, per


def summarize(exchanges: Iterable[Exchange], *, block_size: int | None = None) -> dict[str, Any]:
    """The ``agentx.stats/1`` object of a stream of exchanges (in trace order)."""
    if block_size is not None and block_size < 1:
        raise ValueError("block_size must be >= 1")
    hits = _HitCounter(block_size or DEFAULT_BLOCK_SIZE, block_size)
    sessions: set[str] = set()
    threads: set[tuple[str, str]] = set()
    apis: Counter[str] = Counter()
    skipped = 0
    input_tokens: list[int] = []
    output_tokens: list[int] = []
    think: list[float] = []
    cached: list[int] = []
    sources: Counter[str] = Counter()
    for ex in exchanges:
        if not is_model_call(ex):
            skipped += 1
            continue
        sessions.add(ex.session_id)
        threads.add((ex.session_id, ex.thread_id))
        apis[ex.api] += 1
        rendered: int | None = None
        if ex.hash_ids is not None and ex.hash_block_size:
            hits.hashed(ex, ex.hash_ids, ex.hash_block_size)
        elif ex.hash_ids is None:
            rendered = hits.text(ex)
        if ex.usage.prompt_tokens is not None:
            input_tokens.append(ex.usage.prompt_tokens)
            sources["usage"] += 1
        elif rendered is not None:
            input_tokens.append(rendered)
            sources["tiktoken"] += 1
        out = _output_tokens(ex)
        if out is not None:
            output_tokens.append(out)
        if ex.think_time_s is not None:
            think.append(ex.think_time_s)
        if ex.usage.cached_tokens is not None:
            cached.append(ex.usage.cached_tokens)
    rate, used_bs, per_bs = hits.result()
    source = (
        "usage"
        if set(sources) == {"usage"}
        else "tiktoken"
        if set(sources) == {"tiktoken"}
        else "mixed"
    )
    return {
        "schema": SCHEMA,
        "sessions": len(sessions),
        "threads": len(threads),
        "requests": sum(apis.values()),
        "apis": dict(sorted(apis.items())),
        "input_tokens": percentiles(input_tokens),
        "output_tokens": percentiles(output_tokens),
        "think_time_s": percentiles(think),
        "theoretical_hit_rate": rate,
        "block_size": used_bs,
        # extras
        "tokens_source": source if sources else None,
        "totals": {
            "input_tokens": sum(input_tokens),
            "output_tokens": sum(output_tokens) if output_tokens else None,
            "cached_tokens": sum(cached) if cached else None,
        },
        "block_sizes": per_bs,
        "non_model_rows": skipped,
    }


def compute_stats(path: str | os.PathLike[str], *, block_size: int | None = None) -> dict[str, Any]:
    """Stats of a trace in any supported format (see :func:`agentx.formats.detect_format`)."""
    from agentx.formats import detect_format, load_exchanges

    fmt = detect_format(path)
    result = summarize(load_exchanges(path, shared=True), block_size=block_size)
    result["trace"] = str(path)
    result["format"] = fmt
    return result


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def render_table(result: dict[str, Any]) -> Any:
    """A rich renderable of a stats result."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("trace", f"{result.get('trace', '')} ({result.get('format', '?')})")
    head.add_row("sessions", f"{result['sessions']:,}")
    head.add_row("threads", f"{result['threads']:,}")
    apis = ", ".join(f"{k} {v:,}" for k, v in result["apis"].items()) or "-"
    head.add_row("requests", f"{result['requests']:,}  ({apis})")
    rate = result["theoretical_hit_rate"]
    head.add_row(
        "theoretical hit rate",
        ("-" if rate is None else f"{rate:.1%}")
        + f"  (unbounded cache, block size {result['block_size']})",
    )
    totals = result.get("totals") or {}
    if totals:
        parts = [
            f"input {_fmt(totals.get('input_tokens'))}",
            f"output {_fmt(totals.get('output_tokens'))}",
        ]
        if totals.get("cached_tokens") is not None:
            parts.append(f"cached (reported) {_fmt(totals['cached_tokens'])}")
        head.add_row("total tokens", ", ".join(parts))
    if result.get("non_model_rows"):
        head.add_row("not counted", f"{result['non_model_rows']:,} non-model rows")

    dist = Table(title=None, show_edge=False, header_style="bold")
    dist.add_column("per request")
    for col in ("p50", "p90", "p99", "mean", "max"):
        dist.add_column(col, justify="right")
    source = result.get("tokens_source")
    rows = [
        ("input tokens" + (f" ({source})" if source else ""), result["input_tokens"], ""),
        ("output tokens", result["output_tokens"], ""),
        ("think time (s)", result["think_time_s"], "s"),
    ]
    for label, p, unit in rows:
        dist.add_row(label, *(_fmt(p[k], unit) for k in ("p50", "p90", "p99", "mean", "max")))
    return Group(head, Text(""), dist)
