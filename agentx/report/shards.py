"""The shards of ``agentx merge``: each results directory loaded with its rows' clock, and what
makes a set of them mergeable (one ``--shard I/N`` split, the same replicas), and their server
``/metrics`` as :mod:`agentx.metrics.prometheus.union` counts them (each page once; a routed
run's replicas each on their own).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import AgentxError, UsageError
from agentx.core.record import RequestRecord
from agentx.metrics.prometheus.union import MergedServers, Scrape, scrapes_of, union_servers
from agentx.metrics.replicas import Replicas
from agentx.report.results_dir import load_results
from agentx.results.summary import Summary
from agentx.results.summary.server import MergedServer, ServerBlock


@dataclass(frozen=True, slots=True)
class Shard:
    path: Path
    summary: Summary
    records: list[RequestRecord]
    offset_ns: int  # rows' clock + offset = wall clock
    covers: tuple[str, ...]  # the "I/N" shards it holds (a merged directory holds several)

    @property
    def label(self) -> str:
        return ",".join(self.covers)

    @property
    def started_wall_ns(self) -> int:
        if self.summary.clock is not None:
            return self.summary.clock.wall_ns
        return min((r.start_wall_ns for r in self.records), default=0)


def _offset(summary: Summary, records: Sequence[RequestRecord]) -> tuple[int, bool]:
    """(rows' clock -> wall clock offset, whether it came from the summary's anchor)."""
    if summary.clock is not None:
        return summary.clock.offset_ns, True
    if not records:
        return 0, False
    return int(statistics.median(r.start_wall_ns - r.sent_ns for r in records)), False


def _covers(summary: Summary) -> tuple[str, ...]:
    if summary.merged_from:
        return tuple(m.shard for m in summary.merged_from)
    return (str(summary.config.get("shard") or "0/1"),)


def load_shard(path: Path, warnings: list[str]) -> Shard:
    if path.is_file():  # DIR/summary.json names its directory
        path = path.parent
    summary, records = load_results(path)
    if not records and not (path / "requests.parquet").is_file():
        raise AgentxError(f"{path}: no requests.parquet (a merge needs the per-request rows)")
    offset, anchored = _offset(summary, records)
    if not anchored and records:
        warnings.append(
            f"{path}: no clock anchor in summary.json (written by an older agentx): its rows "
            "were aligned by their wall-clock start times (to within a few ms)"
        )
    return Shard(path, summary, records, offset, _covers(summary))


def check_split(shards: Sequence[Shard], warnings: list[str]) -> None:
    """One split (``I/N`` with one N), each index once; warn about the indices missing."""
    owner: dict[str, Path] = {}
    counts: set[int] = set()
    for s in shards:
        for label in s.covers:
            if label in owner:
                hint = " (two unsharded runs: merge the shards of one `--shard I/N` split)"
                raise UsageError(
                    f"shard {label} is in both {owner[label]} and {s.path}: merging it twice "
                    "would count its requests twice" + (hint if label == "0/1" else "")
                )
            owner[label] = s.path
            try:
                counts.add(int(label.split("/")[1]))
            except (IndexError, ValueError):
                raise AgentxError(f"{s.path}: unreadable shard {label!r} in summary.json") from None
    if len(counts) > 1:
        raise UsageError(
            "these results come from different splits ("
            + ", ".join(f"N={n}" for n in sorted(counts))
            + "): merge the shards of one `--shard I/N` run"
        )
    (n,) = counts
    missing = sorted(set(range(n)) - {int(label.split("/")[0]) for label in owner})
    if missing:
        warnings.append(
            f"merging {len(owner)} of {n} shards: "
            + ", ".join(f"{i}/{n}" for i in missing)
            + " missing"
        )


def _replicas_of(s: Shard) -> Replicas | None:
    routing = s.summary.routing
    if routing is None:
        return None
    if routing.endpoints is None:
        raise AgentxError(f"{s.path}: its routing block names no endpoints (not a replay's)")
    return Replicas(routing.policy, routing.endpoints)


def _describe(s: Shard, replicas: Replicas | None) -> str:
    if replicas is None:
        return f"{s.path} sent to one endpoint ({s.summary.endpoint})"
    return f"{s.path} routed {replicas.policy} over [{', '.join(replicas.endpoints)}]"


def check_replicas(shards: Sequence[Shard]) -> Replicas | None:
    """The replicas every shard routed over (``None``: each sent to one endpoint); shards that
    used other replicas, another policy, or no routing beside routed ones are refused: their
    per-replica figures would add up requests sent to different systems."""
    first = _replicas_of(shards[0])
    for s in shards[1:]:
        other = _replicas_of(s)
        if other != first:
            raise UsageError(
                f"{_describe(shards[0], first)} but {_describe(s, other)}: merge the shards "
                "of one run over the same replicas"
            )
    return first


def with_servers(block: ServerBlock, servers: Sequence[MergedServer]) -> ServerBlock:
    """A merged server block with the servers it counted (what a merge of merges reads back)
    and their scrapes' window, on the wall clock."""
    windows = [s.window_wall_ns for s in servers if s.window_wall_ns is not None]
    return dataclasses.replace(
        block,
        window_t_ns=(min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None,
        servers=tuple(servers),
    )


def replica_servers(
    shards: Sequence[Shard], replicas: Replicas | None, warnings: list[str]
) -> tuple[MergedServers, ...] | None:
    """Each replica's ``/metrics`` over the shards, counted once per page as the run's server
    is; ``None`` (each replica's ``/metrics`` figures unknown) when a shard kept no
    per-replica counters."""
    if replicas is None:
        return None
    n = len(replicas.endpoints)
    blocks = [s.summary.server.replicas if s.summary.server is not None else None for s in shards]
    older = [s.path for s, b in zip(shards, blocks, strict=True) if b is None or len(b) != n]
    if older:
        if any(s.summary.server is not None for s in shards):
            warnings.append(
                f"{', '.join(map(str, older))}: no per-replica /metrics counters in summary.json "
                "(written by an older agentx, or not scraped): each replica's /metrics hit rate "
                "and KV usage peak are unknown in the merge"
            )
        return None
    out: list[MergedServers] = []
    for i in range(n):
        union = union_servers(
            x
            for s, b in zip(shards, blocks, strict=True)
            if b is not None
            for x in scrapes_of(s.label, b[i], s.offset_ns)
        )
        warnings.extend(w for w in union.warnings if w not in warnings)
        out.append(union)
    return tuple(out)


def shard_scrapes(s: Shard, warnings: list[str]) -> list[Scrape]:
    server = s.summary.server
    if server is not None and not server.url and server.servers is None and server.replicas:
        # several replicas, no router page: the run's figures are its replicas' pages summed
        return [x for r in server.replicas for x in scrapes_of(s.label, r, s.offset_ns)]
    found = scrapes_of(s.label, server, s.offset_ns)
    if server is not None and not found and (server.scrapes or 0) > 0:
        warnings.append(
            f"{s.path}: its /metrics figures keep no raw counters (written by an older agentx); "
            "left out of the merged server figures"
        )
    return found
