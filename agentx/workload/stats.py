"""``agentx stats``: the shape of a trace (sessions, threads, tokens, think time) and the prefix-cache
hit rate an unbounded cache would reach on it.

Only model calls count: rows whose ``api`` is one of :data:`agentx.apis.MODEL_APIS` and that
are not flagged :data:`agentx.core.flags.FLAG_NON_MODEL`. Input tokens are the server's ``usage.prompt_tokens``
where it reported them, else agentx's tiktoken count of the rendered request (a row capture
flagged ``usage_estimated`` carries such a count: it counts as ``tiktoken``, and the rows are
counted in ``usage_estimated_rows``).

The theoretical hit rate replays every request, in trace order, against an unbounded block cache
(:class:`agentx.prefixcache.theory.HitRateMeter`, vLLM's rules). Text rows are hashed from their
rendered tokens at ``block_size`` (incrementally, so a long session costs its unique content);
hash-only rows (Weka, Mooncake) use their own ``hash_ids`` at their own block size, or at a
multiple of it when ``block_size`` is one. The block size actually used is reported.

The split of Weka traces' flat parallel agents (``flat_chains``) is counted from the flags the
importer put on the rows (:mod:`agentx.formats.weka.flat`): the same counts agentx-harness logs.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agentx.core.flags import (
    FLAG_USAGE_ESTIMATED,
    WEKA_CHAIN,
    WEKA_EMPTY_HASH,
    WEKA_SEAMS,
    weka_values,
)
from agentx.core.models import Exchange
from agentx.core.percentiles import STATS, percentiles
from agentx.core.progress import Progress
from agentx.prefixcache import tokens
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE
from agentx.prefixcache.theory import HitRateMeter, is_model_call
from agentx.prefixcache.tokenizer import Tokenizer, tokenizer_name
from agentx.results.stats import FlatChains, Stats, StatsTotals


def output_tokens_of(ex: Exchange) -> int | None:
    """A request's output tokens: reported, else counted from its answer (``None``: unknown)."""
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


class _FlatCount:
    """The split of flat parallel agents, from the rows' flags."""

    def __init__(self) -> None:
        self.chains: dict[tuple[str, str], str] = {}  # (session, thread) -> kind
        self.seams = 0
        self.empty = 0

    def observe(self, ex: Exchange) -> None:
        if not ex.flags:
            return
        kind = weka_values(ex.flags, WEKA_CHAIN)
        if kind:
            self.chains.setdefault((ex.session_id, ex.thread_id), kind[0])
        self.seams += sum(int(v) for v in weka_values(ex.flags, WEKA_SEAMS) if v.isdigit())
        self.empty += sum(int(v) for v in weka_values(ex.flags, WEKA_EMPTY_HASH) if v.isdigit())

    def figures(self) -> FlatChains | None:
        if not self.chains:
            return None
        kinds = Counter(self.chains.values())
        return FlatChains(
            traces_split=len({session for session, _ in self.chains}),
            chains=len(self.chains),
            agents=kinds["agent"],
            sidecars=kinds["sidecar"],
            reductions=kinds["reduction"],
            worker_group=kinds["worker"],
            seams_merged=self.seams,
            empty_hash_on_main=self.empty,
        )


def summarize(
    exchanges: Iterable[Exchange],
    *,
    block_size: int | None = None,
    tokenizer: Tokenizer | None = None,
    each: Callable[[Exchange, int | None, int], None] | None = None,
) -> Stats:
    """The ``agentx.stats/1`` object of a stream of exchanges (in trace order). Text rows'
    theoretical hits are counted in ``tokenizer``'s tokens (default: agentx's cl100k). ``each``
    is told of every model call counted: the exchange, its prompt tokens as the unbounded cache
    counted them (``None``: not hashed) and the tokens that cache served it (the dataset
    card's hit rate by turn). The split of flat parallel agents is read from the rows' flags,
    so a Weka trace and the agentx trace converted from it report the same split (``None``:
    nothing was split)."""
    if block_size is not None and block_size < 1:
        raise ValueError("block_size must be >= 1")
    hits = HitRateMeter(block_size or DEFAULT_BLOCK_SIZE, block_size, tokenizer=tokenizer)
    sessions: set[str] = set()
    threads: set[tuple[str, str]] = set()
    apis: Counter[str] = Counter()
    skipped = 0
    input_tokens: list[int] = []
    output_tokens: list[int] = []
    think: list[float] = []
    cached: list[int] = []
    sources: Counter[str] = Counter()
    estimated = 0  # rows capture flagged usage_estimated
    flat = _FlatCount()
    for ex in exchanges:
        flat.observe(ex)
        if not is_model_call(ex):
            skipped += 1
            continue
        sessions.add(ex.session_id)
        threads.add((ex.session_id, ex.thread_id))
        apis[str(ex.api)] += 1  # plain str: orjson takes no str subclass as a key
        served = hits.hit_tokens if each is not None else 0
        counted = hits.observe(ex)
        if each is not None:
            each(ex, counted, hits.hit_tokens - served)
        rendered = counted if ex.hash_ids is None else None
        if ex.usage.prompt_tokens is not None:
            input_tokens.append(ex.usage.prompt_tokens)
            # capture counted it with agentx's tokenizer: the provider reported no usage
            sources["tiktoken" if FLAG_USAGE_ESTIMATED in ex.flags else "usage"] += 1
            estimated += FLAG_USAGE_ESTIMATED in ex.flags
        elif rendered is not None:
            input_tokens.append(rendered)
            sources["tiktoken"] += 1
        out = output_tokens_of(ex)
        if out is not None:
            output_tokens.append(out)
        if ex.think_time_s is not None:
            think.append(ex.think_time_s)
        if ex.usage.cached_tokens is not None:
            cached.append(ex.usage.cached_tokens)
    source = (
        "usage"
        if set(sources) == {"usage"}
        else "tiktoken"
        if set(sources) == {"tiktoken"}
        else "mixed"
    )
    return Stats(
        sessions=len(sessions),
        threads=len(threads),
        requests=sum(apis.values()),
        apis=dict(sorted(apis.items())),
        input_tokens=percentiles(input_tokens),
        output_tokens=percentiles(output_tokens),
        think_time_s=percentiles(think),
        theoretical_hit_rate=hits.hit_rate,
        block_size=hits.main_block_size,
        tokenizer=tokenizer_name(tokenizer),
        tokens_source=source if sources else None,
        usage_estimated_rows=estimated,
        totals=StatsTotals(
            input_tokens=sum(input_tokens),
            output_tokens=sum(output_tokens) if output_tokens else None,
            cached_tokens=sum(cached) if cached else None,
        ),
        block_sizes=hits.per_block_size(),
        non_model_rows=skipped,
        flat_chains=flat.figures(),
    )


# What stats reads of an agentx trace: everything but the columns it never uses (chunk
# timings, credentials, the assistant message, importers' extra fields).
STATS_SKIPS = frozenset({"chunk_offsets_ns", "credentials", "response_message", "import_fields"})


def compute_stats(
    path: str | os.PathLike[str],
    *,
    block_size: int | None = None,
    tokenizer: Tokenizer | None = None,
    progress: Progress | None = None,
    flat_chains: bool = True,
) -> Stats:
    """Stats of a trace in any supported format (see :func:`agentx.formats.detect_format`),
    streamed: memory holds the distributions and the unbounded cache's block set, not the
    trace. ``progress`` follows the reading; ``flat_chains``: split Weka traces' flat parallel
    agents into threads (:func:`agentx.formats.load_exchanges`)."""
    from agentx.formats import detect_format, load_exchanges
    from agentx.store.schema import COLUMNS

    fmt = detect_format(path)
    prog = progress or Progress()
    prog.phase("reading")
    columns = [c for c in COLUMNS if c not in STATS_SKIPS]
    exchanges = load_exchanges(
        path, shared=True, columns=columns, progress=prog, flat_chains=flat_chains
    )
    result = summarize(
        _counted(exchanges, prog),
        block_size=block_size,
        tokenizer=tokenizer,
    )
    return dataclasses.replace(result, trace=str(path), format=fmt)


def _counted(exchanges: Iterable[Exchange], progress: Progress) -> Iterator[Exchange]:
    for ex in exchanges:
        progress.count("exchanges")
        yield ex


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def _flat_line(f: FlatChains) -> str:
    line = (
        f"{f.traces_split:,} traces split into {f.chains:,} more chains ({f.agents:,} agents, "
        f"{f.sidecars:,} sidecars, {f.reductions:,} reductions, {f.worker_group:,} "
        f"worker-group members), {f.seams_merged:,} seams merged"
    )
    if f.empty_hash_on_main:
        line += f", {f.empty_hash_on_main:,} rows without block ids kept on main"
    return line


def render_table(result: Stats) -> Any:
    """A rich renderable of a stats result."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from agentx.core.tables import Table as Figures

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("trace", f"{result.trace or ''} ({result.format or '?'})")
    head.add_row("sessions", f"{result.sessions:,}")
    head.add_row("threads", f"{result.threads:,}")
    apis = ", ".join(f"{k} {v:,}" for k, v in result.apis.items()) or "-"
    head.add_row("requests", f"{result.requests:,}  ({apis})")
    rate = result.theoretical_hit_rate
    head.add_row(
        "theoretical hit rate",
        ("-" if rate is None else f"{rate:.1%}")
        + f"  (unbounded cache, block size {result.block_size}, "
        + f"{result.tokenizer} tokens)",
    )
    totals = result.totals
    parts = [f"input {_fmt(totals.input_tokens)}", f"output {_fmt(totals.output_tokens)}"]
    if totals.cached_tokens is not None:
        parts.append(f"cached (reported) {_fmt(totals.cached_tokens)}")
    head.add_row("total tokens", ", ".join(parts))
    if result.non_model_rows:
        head.add_row("not counted", f"{result.non_model_rows:,} non-model rows")
    if result.flat_chains is not None:
        head.add_row("flat agents", _flat_line(result.flat_chains))

    dist = Figures()
    dist.add_column("per request")
    for col in STATS:
        dist.add_column(col, justify="right")
    source = result.tokens_source
    if source and result.usage_estimated_rows:
        source += f", {result.usage_estimated_rows:,} counted at capture: no usage reported"
    rows = [
        ("input tokens" + (f" ({source})" if source else ""), result.input_tokens, ""),
        ("output tokens", result.output_tokens, ""),
        ("think time (s)", result.think_time_s, "s"),
    ]
    for label, p, unit in rows:
        dist.add_row(label, *(_fmt(p.stat(k), unit) for k in STATS))
    return Group(head, Text(""), dist)
