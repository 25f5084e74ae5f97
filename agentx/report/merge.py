"""``agentx merge DIR... -o MERGED``: shards' results directories combined from their rows.

Nothing is averaged. The merged ``summary.json`` is built by the same code as one run's, from the
union of the shards' ``requests.parquet`` rows, so percentiles, token totals, error counts,
roll-ups and the ``--slo`` checks are exactly what one run sending those requests would report:

- Clock: each shard's rows are on its own perf counter; ``summary.json`` ``clock`` maps it to
  the wall clock, so the merged rows' ``sent_ns``/``scheduled_ns`` are wall-clock ns (merged
  ``clock`` is the identity). Throughput is over the union window: the earliest send of a
  measured request of any shard to the latest finish of any shard.
- Theoretical hit rate: the shards' ``theory.parquet`` rows are replayed through one unbounded
  cache in send order (:mod:`agentx.prefixcache.theory`): exact, cross-shard sharing included.
- Server ``/metrics``: each server (metrics URL) counted once, then summed over servers
  (:mod:`agentx.metrics.prometheus.union`).
- Sessions started/completed add up; the client figures are the busiest shard's.
- Several replicas (``replay --endpoint A --endpoint B --route POLICY``): the ``routing`` block
  is recomputed from the merged rows by the producer of a live run's
  (:func:`agentx.metrics.replicas.replica_routing`), each replica's own theoretical cache
  replayed over every shard's rows routed to it. The shards must have used the same replicas
  (one endpoint list, one policy); routed and unrouted shards do not merge.

Shards must come from one split (``--shard I/N`` with one ``N``), each index at most once (a
merged directory counts as the shards it merged); a missing index is a warning.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentx.core.errors import AgentxError, UsageError
from agentx.core.record import RequestRecord
from agentx.metrics.cost import CostOptions, HourParts, Prices
from agentx.metrics.prometheus.server_metrics import ServerMetrics
from agentx.metrics.prometheus.union import union_servers
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.prefixcache.theory import TheoryRow, union_theory
from agentx.report.results_dir import THEORY, write_results
from agentx.report.shards import (
    Shard,
    check_replicas,
    check_split,
    load_shard,
    replica_servers,
    shard_scrapes,
    with_servers,
)
from agentx.results.summary import Summary
from agentx.results.summary.run import MergedShard


@dataclass(frozen=True, slots=True)
class MergeResult:
    summary: Summary
    records: list[RequestRecord]
    output_dir: Path | None
    warnings: tuple[str, ...]


def _same(shards: Sequence[Shard], get: Callable[[Summary], Any]) -> list[Any]:
    """The distinct values of ``get(summary)`` over the shards, in shard order."""
    out: list[Any] = []
    for s in shards:
        v = get(s.summary)
        if v not in out:
            out.append(v)
    return out


def _identity(shards: Sequence[Shard], warnings: list[str]) -> dict[str, Any]:
    """What makes the merged run comparable: each of the shards' own when they agree (the
    trace's fingerprint, the server, the labels; the client host of one machine), else unknown,
    with a warning for a fingerprint or labels that differ."""
    out: dict[str, Any] = {}
    for key in ("trace_fingerprint", "server_identity", "client_host", "labels"):
        values = _same(shards, operator.attrgetter(key))
        out[key] = values[0] if len(values) == 1 else (() if key == "labels" else None)
    if len(_same(shards, lambda d: d.trace_fingerprint)) > 1:
        warnings.append("the shards replayed traces with different fingerprints")
    if len(_same(shards, lambda d: d.labels)) > 1:
        warnings.append("the shards carry different --label values: the merge has none")
    return out


def _config(shards: Sequence[Shard]) -> dict[str, Any]:
    """The first shard's options; an option the shards disagree on lists every shard's value."""
    configs = [s.summary.config for s in shards]
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for c in configs for k in c):
        values = [c.get(key) for c in configs]
        out[key] = values[0] if all(v == values[0] for v in values) else values
    out["shard"] = sorted(label for s in shards for label in s.covers)
    out["interrupted"] = any(bool(c.get("interrupted")) for c in configs)
    return out


def _theory(
    shards: Sequence[Shard], block_size: int, warnings: list[str]
) -> list[TheoryRow] | None:
    from agentx.store.theory import open_theory

    missing = [s.path for s in shards if not (s.path / THEORY).is_file()]
    if missing:
        warnings.append(
            f"no {THEORY} in {', '.join(map(str, missing))} (written by an older agentx): the "
            "theoretical hit rate adds up the shards' own, without what they could have shared"
        )
        return None
    files = [open_theory(s.path / THEORY) for s in shards]
    for s, f in zip(shards, files, strict=True):
        if f.block_size != block_size:
            raise AgentxError(f"{s.path}/{THEORY}: block size {f.block_size}, not {block_size}")
    return list(
        union_theory([(f, s.offset_ns) for s, f in zip(shards, files, strict=True)], block_size)
    )


def _rows(shards: Sequence[Shard], theory: list[TheoryRow] | None) -> list[RequestRecord]:
    """Every shard's rows on the wall clock, with the shared cache's theoretical hits."""
    expected = {t.request_id: t for t in theory} if theory is not None else {}
    seen: dict[str, Path] = {}
    out: list[RequestRecord] = []
    for s in shards:
        for r in s.records:
            if r.request_id in seen:
                raise AgentxError(
                    f"request id {r.request_id} is in both {seen[r.request_id]} and {s.path}"
                )
            seen[r.request_id] = s.path
            e = expected.get(r.request_id)
            r = dataclasses.replace(
                r, sent_ns=r.sent_ns + s.offset_ns, scheduled_ns=r.scheduled_ns + s.offset_ns
            )
            if e is not None:
                r = dataclasses.replace(
                    r, expected_prompt_tokens=e.prompt_tokens, theoretical_hit_tokens=e.hit_tokens
                )
                if e.replica is not None:  # the replica's own cache, shared by every shard
                    r = dataclasses.replace(r, replica_theoretical_hit_tokens=e.replica_hit_tokens)
            out.append(r)
    out.sort(key=lambda r: r.sent_ns)
    return out


def _slo(shards: Sequence[Shard], slo: str | None, warnings: list[str]) -> str | None:
    if slo is not None:
        return slo or None
    specs = [v for v in _same(shards, lambda d: d.config.get("slo")) if v]
    if len(specs) > 1:
        warnings.append(f"the shards ran different --slo specs; checking the first: {specs[0]}")
    return specs[0] if specs else None


def _run_info(shards: Sequence[Shard], config: dict[str, Any]) -> RunInfo:
    starts = [s.started_wall_ns for s in shards]
    ends = [
        st + int(float(s.summary.duration_s or 0.0) * 1e9)
        for st, s in zip(starts, shards, strict=True)
    ]
    start = min(starts)
    endpoints = _same(shards, lambda d: d.endpoint)
    models = _same(shards, lambda d: d.model)
    clients = [s.summary.client for s in shards]
    window = _same(shards, lambda d: d.windows.window_s)
    return RunInfo(
        endpoint=", ".join(map(str, endpoints)),
        model=", ".join(map(str, models)),
        started_at=min(s.summary.started_at or "" for s in shards),
        duration_s=max(ends) / 1e9 - start / 1e9,
        window_s=window[0] if len(window) == 1 else None,
        sessions_started=sum(s.summary.sessions.started or 0 for s in shards),
        sessions_completed=sum(s.summary.sessions.completed or 0 for s in shards),
        client_cpu_percent=max(float(c.cpu_percent or 0.0) for c in clients),
        client_saturated=any(bool(c.saturated) for c in clients),
        config=config,
        started_perf_ns=start,  # the merged rows are on the wall clock
        started_wall_ns=start,
    )


def _percentiles(config: Mapping[str, Any]) -> tuple[float, ...]:
    """The shards' --percentiles (none when they disagree: the config then lists them all)."""
    qs = config.get("percentiles")
    if isinstance(qs, list) and all(isinstance(q, int | float) for q in qs):
        return tuple(float(q) for q in qs)
    return ()


def _cost(config: Mapping[str, Any], warnings: list[str]) -> CostOptions | None:
    """The shards' cost options, rebuilt from their config (they are the same for every shard
    of a split; when they are not, the merged summary has no cost block)."""
    d = config.get("cost")
    if d is None:
        return None
    if not isinstance(d, dict):
        warnings.append(
            "the shards had different cost options: no cost block "
            "(`agentx report --gpu-hour-cost ...` adds one)"
        )
        return None
    prices, parts = d.get("prices"), d.get("parts")
    return CostOptions(
        **{
            **d,
            "prices": Prices(**prices) if isinstance(prices, dict) else None,
            "parts": HourParts(**parts) if isinstance(parts, dict) else None,
        }
    )


def _merged_from(shards: Sequence[Shard]) -> tuple[MergedShard, ...]:
    out: list[MergedShard] = []
    for s in shards:
        if s.summary.merged_from:
            out.extend(s.summary.merged_from)
            continue
        out.append(
            MergedShard(
                dir=str(s.path),
                shard=s.covers[0],
                started_at=s.summary.started_at,
                endpoint=s.summary.endpoint,
                requests=s.summary.requests.total,
                agentx_version=s.summary.agentx_version,
            )
        )
    return tuple(sorted(out, key=lambda m: tuple(int(x) for x in m.shard.split("/")[::-1])))


def merge_results(
    dirs: Sequence[str | Path], output_dir: Path | None = None, slo: str | None = None
) -> MergeResult:
    """Merge shards' results directories; write the merged directory when ``output_dir``.

    ``slo`` re-checks the merged rows against another spec ("" for none); by default the shards'
    own ``--slo``. Raises ``AgentxError`` for shards that cannot be merged without double counting.
    """
    if not dirs:
        raise UsageError("merge needs at least one results directory")
    warnings: list[str] = []
    shards = [load_shard(Path(d), warnings) for d in dirs]
    check_split(shards, warnings)
    replicas = check_replicas(shards)
    sizes = _same(shards, lambda d: d.cache.block_size)
    if len(sizes) != 1 or not isinstance(sizes[0], int):
        raise AgentxError(
            f"the shards measured the theoretical hit rate at different block sizes ({sizes})"
        )
    block_size: int = sizes[0]
    if len(_same(shards, lambda d: d.model)) > 1:
        warnings.append("the shards replayed against different models")
    theory = _theory(shards, block_size, warnings)
    records = _rows(shards, theory)
    servers = union_servers(scrape for s in shards for scrape in shard_scrapes(s, warnings))
    warnings.extend(servers.warnings)
    pages = replica_servers(shards, replicas, warnings)
    metrics = servers.metrics
    if pages is not None and any(p.metrics is not None for p in pages):
        metrics = dataclasses.replace(
            metrics or ServerMetrics(),
            replicas=tuple(p.metrics or ServerMetrics() for p in pages),
        )
    spec = _slo(shards, slo, warnings)
    config = _config(shards)
    config["slo"] = spec
    figures = build_summary(
        _run_info(shards, config),
        records,
        metrics,
        parse_slo(spec) if spec else [],
        block_size,
        extra_percentiles=_percentiles(config),
        cost=_cost(config, warnings),
        replicas=replicas,
    )
    server = figures.server
    if server is not None:
        server = with_servers(server, servers.servers)
        if server.replicas is not None and pages is not None:
            server = dataclasses.replace(
                server,
                replicas=tuple(
                    with_servers(b, p.servers) for b, p in zip(server.replicas, pages, strict=True)
                ),
            )
    shard_warnings = [
        w if s.summary.merged_from else f"shard {s.label}: {w}"
        for s in shards
        for w in s.summary.warnings
    ]
    summary = dataclasses.replace(
        figures,
        server=server,
        merged_from=_merged_from(shards),
        warnings=(*warnings, *shard_warnings),
        **_identity(shards, warnings),
    )
    if output_dir is not None:
        write_results(output_dir, summary, records, theory, whole=True)
    return MergeResult(summary, records, output_dir, tuple(warnings))
