"""``agentx stats --json`` (``agentx.stats/1``, the contract in docs/cli.md): the shape of a trace and
the hit rate an unbounded prefix cache would reach on it (:mod:`agentx.workload.stats`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.core.percentiles import P
from agentx.results.base import (
    Json,
    bad,
    counts,
    integer,
    need,
    num,
    obj,
    opt_obj,
    p_of,
    schema_obj,
    sub,
    text,
)

SCHEMA = "agentx.stats/1"


@dataclass(frozen=True, slots=True)
class BlockSizeFigures:
    """The requests hashed at one block size and what the unbounded cache served of them."""

    requests: int
    prompt_tokens: int
    hit_tokens: int

    def to_json(self) -> Json:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "hit_tokens": self.hit_tokens,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BlockSizeFigures:
        return cls(*(need(integer(d, k), k) for k in ("requests", "prompt_tokens", "hit_tokens")))


@dataclass(frozen=True, slots=True)
class StatsTotals:
    """Sums over the model calls; ``None`` when nothing was known (no answer, no cache report)."""

    input_tokens: int
    output_tokens: int | None
    cached_tokens: int | None

    def to_json(self) -> Json:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatsTotals:
        return cls(
            need(integer(d, "input_tokens"), "input_tokens"),
            integer(d, "output_tokens"),
            integer(d, "cached_tokens"),
        )


@dataclass(frozen=True, slots=True)
class FlatChains:
    """How Weka traces' flat parallel agents were split into threads (the counts agentx-harness
    logs): traces split, the chains beside their main agents by kind (``agents``: solo agents,
    ``sidecars``, ``reductions``, ``worker_group``: members of parallel fan-outs), the seams
    spliced back onto their chains and the rows without block ids kept on the main agent's."""

    traces_split: int
    chains: int
    agents: int
    sidecars: int
    reductions: int
    worker_group: int
    seams_merged: int
    empty_hash_on_main: int

    def to_json(self) -> Json:
        return {
            "traces_split": self.traces_split,
            "chains": self.chains,
            "agents": self.agents,
            "sidecars": self.sidecars,
            "reductions": self.reductions,
            "worker_group": self.worker_group,
            "seams_merged": self.seams_merged,
            "empty_hash_on_main": self.empty_hash_on_main,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FlatChains:
        keys = (
            "traces_split",
            "chains",
            "agents",
            "sidecars",
            "reductions",
            "worker_group",
            "seams_merged",
            "empty_hash_on_main",
        )
        return cls(*(need(integer(d, k), k) for k in keys))


def flat_chains_of(d: Mapping[str, Any]) -> FlatChains | None:
    found = opt_obj(d, "flat_chains")
    return None if found is None else FlatChains.from_json(found)


@dataclass(frozen=True, slots=True)
class Stats:
    """The contract's keys, then agentx's: whose tokens counted (``tokenizer``), where input
    counts came from (``tokens_source``: ``usage``, ``tiktoken`` or ``mixed``; a row capture
    flagged ``usage_estimated`` was counted by agentx's tokenizer, so it is ``tiktoken``) and
    how many rows capture counted so (``usage_estimated_rows``; ``None`` in a file written
    before it was counted), the totals, the figures per block size, the rows that are not model
    calls, the split of flat parallel agents (``None`` when nothing was split: no flat agents,
    or ``--flat-chains off``); ``trace`` and ``format`` when read from a file."""

    sessions: int
    threads: int
    requests: int
    apis: Mapping[str, int]  # requests per API family, by name
    input_tokens: P
    output_tokens: P
    think_time_s: P
    theoretical_hit_rate: float | None
    block_size: int
    tokenizer: str
    tokens_source: str | None
    usage_estimated_rows: int | None
    totals: StatsTotals
    block_sizes: Mapping[int, BlockSizeFigures]  # by increasing block size
    non_model_rows: int
    flat_chains: FlatChains | None = None
    trace: str | None = None
    format: str | None = None

    def to_json(self) -> Json:
        out: Json = {
            "schema": SCHEMA,
            "sessions": self.sessions,
            "threads": self.threads,
            "requests": self.requests,
            "apis": dict(self.apis),
            "input_tokens": self.input_tokens.to_json(),
            "output_tokens": self.output_tokens.to_json(),
            "think_time_s": self.think_time_s.to_json(),
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "block_size": self.block_size,
            "tokenizer": self.tokenizer,
            "tokens_source": self.tokens_source,
            "usage_estimated_rows": self.usage_estimated_rows,
            "totals": self.totals.to_json(),
            "block_sizes": {str(bs): f.to_json() for bs, f in self.block_sizes.items()},
            "non_model_rows": self.non_model_rows,
            "flat_chains": None if self.flat_chains is None else self.flat_chains.to_json(),
        }
        if self.trace is not None:
            out["trace"] = self.trace
        if self.format is not None:
            out["format"] = self.format
        return out

    @classmethod
    def from_json(cls, v: object) -> Stats:
        d = schema_obj(v, SCHEMA)
        sizes: dict[int, BlockSizeFigures] = {}
        for k, f in sub(d, "block_sizes").items():
            if not k.isdigit():
                raise bad("block_sizes", "block sizes as keys", k)
            sizes[int(k)] = BlockSizeFigures.from_json(obj(f, "block_sizes"))

        def count(key: str) -> int:
            return need(integer(d, key), key)

        return cls(
            sessions=count("sessions"),
            threads=count("threads"),
            requests=count("requests"),
            apis=counts(d, "apis"),
            input_tokens=p_of(d, "input_tokens"),
            output_tokens=p_of(d, "output_tokens"),
            think_time_s=p_of(d, "think_time_s"),
            theoretical_hit_rate=num(d, "theoretical_hit_rate"),
            block_size=count("block_size"),
            tokenizer=need(text(d, "tokenizer"), "tokenizer"),
            tokens_source=text(d, "tokens_source"),
            usage_estimated_rows=integer(d, "usage_estimated_rows"),
            totals=StatsTotals.from_json(sub(d, "totals")),
            block_sizes=sizes,
            non_model_rows=count("non_model_rows"),
            flat_chains=flat_chains_of(d),
            trace=text(d, "trace"),
            format=text(d, "format"),
        )
