"""What ``summary.json`` keeps of the server's ``/metrics``: ``cache.tiers`` (where prompt tokens
came from) and the ``server`` block (counter deltas, raw counter series, KV-usage samples; for a
merge, each server counted once). Derivations: :mod:`agentx.metrics.prometheus`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import (
    Json,
    bad,
    integer,
    items,
    need,
    num,
    number,
    numbers,
    obj,
    opt_obj,
    pair,
    sub,
    text,
    texts,
    whole,
)

Labels = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, Labels]


@dataclass(frozen=True, slots=True)
class CounterSeries:
    """One counter series over a run, raw: its value at the first scrape (``None``: created
    since), the last value seen, and the reset-aware increase in between. What ``agentx merge``
    needs to count a server once however many shards scraped it."""

    name: str
    labels: Labels
    first: float | None
    last: float
    delta: float

    def to_json(self) -> Json:
        return {
            "name": self.name,
            "labels": dict(self.labels),
            "first": self.first,
            "last": self.last,
            "delta": self.delta,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CounterSeries:
        labels = tuple(sorted((str(k), str(v)) for k, v in sub(d, "labels").items()))
        first = num(d, "first")
        # counters are floats however a file spells them (Prometheus' sample values)
        return cls(
            need(text(d, "name"), "name"),
            labels,
            None if first is None else float(first),
            float(need(num(d, "last"), "last")),
            float(need(num(d, "delta"), "delta")),
        )

    @property
    def key(self) -> SeriesKey:
        return (self.name, self.labels)


@dataclass(frozen=True, slots=True)
class TierPart:
    """Prompt tokens from one source and their share of all prompt tokens."""

    tokens: float
    fraction: float | None

    def to_json(self) -> Json:
        return {"tokens": self.tokens, "fraction": self.fraction}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TierPart:
        return cls(need(num(d, "tokens"), "tokens"), num(d, "fraction"))


@dataclass(frozen=True, slots=True)
class ExternalCache:
    """The KV connector's own lookups (vLLM ``external_prefix_cache_*``)."""

    queries: float
    hits: float
    hit_rate: float | None

    def to_json(self) -> Json:
        return {"queries": self.queries, "hits": self.hits, "hit_rate": self.hit_rate}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExternalCache:
        return cls(
            need(num(d, "queries"), "queries"), need(num(d, "hits"), "hits"), num(d, "hit_rate")
        )


VLLM_SOURCES = ("local_cache_hit", "external_kv_transfer", "local_compute")


@dataclass(frozen=True, slots=True)
class Tiers:
    """``cache.tiers``: where prompt tokens came from, each part present only when the server
    exposes it. vLLM splits every prompt token three ways (``prompt_tokens_by_source``); SGLang
    gives the cached tokens by source, from which the computed ones follow."""

    prompt_tokens: float | None = None
    local_cache_hit: TierPart | None = None
    external_kv_transfer: TierPart | None = None
    local_compute: TierPart | None = None
    external_prefix_cache: ExternalCache | None = None
    cached_by_source: Mapping[str, float] | None = None

    def part(self, source: str) -> TierPart | None:
        """A source of :data:`VLLM_SOURCES` by name."""
        return {
            "local_cache_hit": self.local_cache_hit,
            "external_kv_transfer": self.external_kv_transfer,
            "local_compute": self.local_compute,
        }.get(source)

    def to_json(self) -> Json:
        total: Json = {} if self.prompt_tokens is None else {"prompt_tokens": self.prompt_tokens}
        parts: Json = {s: p.to_json() for s in VLLM_SOURCES if (p := self.part(s)) is not None}
        external: Json = {}
        if self.external_prefix_cache is not None:
            external["external_prefix_cache"] = self.external_prefix_cache.to_json()
        # in the order the derivation writes them: vLLM's three-way split first; without it,
        # SGLang's total and computed share after the connector's lookups
        split = self.local_cache_hit is not None
        out = {**total, **parts, **external} if split else {**external, **total, **parts}
        if self.cached_by_source is not None:
            out["cached_by_source"] = dict(self.cached_by_source)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Tiers:
        def part(key: str) -> TierPart | None:
            v = opt_obj(d, key)
            return None if v is None else TierPart.from_json(v)

        external = opt_obj(d, "external_prefix_cache")
        return cls(
            num(d, "prompt_tokens"),
            part("local_cache_hit"),
            part("external_kv_transfer"),
            part("local_compute"),
            None if external is None else ExternalCache.from_json(external),
            numbers(d, "cached_by_source") if "cached_by_source" in d else None,
        )


@dataclass(frozen=True, slots=True)
class MergedServer:
    """One server's counters over every shard of a merge that scraped it (first: the smallest
    first value, last: the largest; delta by ``rules``: which rule counted each series)."""

    url: str
    shards: tuple[str, ...]
    window_wall_ns: tuple[int, int] | None
    counters: tuple[CounterSeries, ...]
    rules: Mapping[str, str]  # series name -> rule used, when not "one scrape"
    scrapes: int
    scrape_errors: int

    def to_json(self) -> Json:
        return {
            "url": self.url,
            "shards": list(self.shards),
            "window_t_ns": list(self.window_wall_ns) if self.window_wall_ns else None,
            "rules": dict(self.rules),
            "scrapes": self.scrapes,
            "scrape_errors": self.scrape_errors,
            "counters": [c.to_json() for c in self.counters],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MergedServer:
        rules = sub(d, "rules")
        return cls(
            need(text(d, "url"), "url"),
            texts(d, "shards"),
            pair(d, "window_t_ns"),
            tuple(CounterSeries.from_json(obj(c, "counters")) for c in items(d, "counters")),
            {str(k): str(v) for k, v in rules.items()},
            integer(d, "scrapes") or 0,
            integer(d, "scrape_errors") or 0,
        )


@dataclass(frozen=True, slots=True)
class ServerBlock:
    """``summary.server``: the server's own view of the run. ``counters`` is ``None`` in a
    summary written before agentx kept raw counters (a merge then leaves it out); ``servers``
    only in a merged summary; times are on the run's clock (a merge's: the wall clock).
    ``replicas``: a run over several replicas, each replica's own page in replica order (what
    a merge of routed shards combines per replica); the fields above are then their sum, or a
    server-side router's own page."""

    source: str | None = None  # "vllm" | "sglang" | "sglang-gauge"
    queries: float | None = None
    hits: float | None = None
    scrapes: int | None = None
    scrape_errors: int | None = None
    deltas: Mapping[str, float] | None = None
    url: str | None = None
    counters: tuple[CounterSeries, ...] | None = None
    kv_cache_usage_samples: tuple[tuple[int, float], ...] = ()  # (t_ns, kv_cache_usage_perc)
    window_t_ns: tuple[int, int] | None = None  # first and last scrape
    servers: tuple[MergedServer, ...] | None = None
    replicas: tuple[ServerBlock, ...] | None = None

    def to_json(self) -> Json:
        out: Json = {
            "source": self.source,
            "queries": self.queries,
            "hits": self.hits,
            "scrapes": self.scrapes,
            "scrape_errors": self.scrape_errors,
            "deltas": None if self.deltas is None else dict(self.deltas),
            "url": self.url,
        }
        if self.counters is not None:
            out["counters"] = [c.to_json() for c in self.counters]
        out["kv_cache_usage_samples"] = [[t, v] for t, v in self.kv_cache_usage_samples]
        out["window_t_ns"] = None if self.window_t_ns is None else list(self.window_t_ns)
        if self.servers is not None:
            out["servers"] = [s.to_json() for s in self.servers]
        if self.replicas is not None:
            out["replicas"] = [r.to_json() for r in self.replicas]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ServerBlock:
        samples = []
        for p in items(d, "kv_cache_usage_samples"):
            if not isinstance(p, list) or len(p) != 2:
                raise bad("kv_cache_usage_samples", "[t_ns, value] pairs", p)
            samples.append((whole(p[0], "t_ns"), float(number(p[1], "kv_cache_usage_perc"))))
        return cls(
            source=text(d, "source"),
            queries=num(d, "queries"),
            hits=num(d, "hits"),
            scrapes=integer(d, "scrapes"),
            scrape_errors=integer(d, "scrape_errors"),
            deltas=numbers(d, "deltas") if d.get("deltas") is not None else None,
            url=text(d, "url"),
            counters=(
                tuple(CounterSeries.from_json(obj(c, "counters")) for c in items(d, "counters"))
                if "counters" in d
                else None
            ),
            kv_cache_usage_samples=tuple(samples),
            window_t_ns=pair(d, "window_t_ns"),
            servers=(
                tuple(MergedServer.from_json(obj(s, "servers")) for s in items(d, "servers"))
                if "servers" in d
                else None
            ),
            replicas=(
                tuple(ServerBlock.from_json(obj(r, "replicas")) for r in items(d, "replicas"))
                if "replicas" in d
                else None
            ),
        )
