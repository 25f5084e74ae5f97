"""Hash ids and Weka JSON documents of planned sessions, written one file at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .params import BLOCK_SIZE, DEFAULT_PARAMS, DEFAULT_SEED, Params
from .session import Request, Session, SessionBuilder, Subagent

JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY


@dataclass(frozen=True)
class TraceSummary:
    requests: int
    input_tokens: int
    output_tokens: int
    hit_tokens: int  # theoretical (unbounded cache), from the generator's own sharing plan
    subagents: int
    json_bytes: int
    in_tokens: np.ndarray  # every request's ``in``
    flat_chains: int = 0  # chains of flat parallel agents among the main requests


def assign_ids(trace: Session) -> int:
    """Hash ids, local scope: the main thread's in order of first use, then the subagents'
    (as in the fixtures), then the flat chains'. A subagent's first request starts with its
    type's tools + system blocks, shared by every subagent of that type; a flat chain's, with
    the leading blocks of the main request it forked off. Returns the theoretical hit blocks (an
    unbounded cache; vLLM never serves a prompt's last token from cache)."""
    next_id = 1
    hits = 0

    def fresh(n: int) -> np.ndarray:
        nonlocal next_id
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        return ids

    def thread(reqs: list[Request], head: np.ndarray, head_cached: bool) -> None:
        nonlocal hits
        ctx = head
        for i, r in enumerate(reqs):
            nb = r.blocks
            keep = ctx[: min(len(ctx) if i == 0 else r.shared_blocks, nb)]
            r.hash_ids = np.concatenate([keep, fresh(nb - len(keep))])
            if i or head_cached:
                hits += min(len(keep), (r.in_tokens - 1) // BLOCK_SIZE)
            ctx = r.hash_ids

    main = [x for x in trace.items if isinstance(x, Request) and x.chain is None]
    thread(main, np.empty(0, np.int64), False)
    heads: dict[str, np.ndarray] = {}
    for sub in (x for x in trace.items if isinstance(x, Subagent)):
        key = f"{sub.kind}/{sub.model}/{sub.tool_tokens}/{sub.system_tokens}"
        head = heads.get(key)
        if head is None:
            heads[key] = fresh(sub.prefix_blocks)
        thread(sub.requests, heads[key], head is not None)
    chains: dict[int, list[Request]] = {}
    for x in trace.items:
        if isinstance(x, Request) and x.chain is not None:
            chains.setdefault(x.chain, []).append(x)
    for reqs in chains.values():
        fork = reqs[0].fork
        if fork is None or fork.hash_ids is None:
            thread(reqs, np.empty(0, np.int64), False)
        else:
            thread(reqs, fork.hash_ids[: reqs[0].fork_blocks], True)
    return hits


def flat_chains(trace: Session) -> int:
    """How many flat chains the session has."""
    return len({x.chain for x in trace.items if isinstance(x, Request) and x.chain is not None})


def _req_doc(r: Request) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "t": r.t,
        "type": r.type,
        "model": r.model,
        "in": r.in_tokens,
        "out": r.out_tokens,
        "hash_ids": r.hash_ids,
        "input_types": list(r.input_types),
        "output_types": list(r.output_types),
        "stop": r.stop,
    }
    if r.api_time is not None:
        doc["api_time"] = r.api_time
    if r.ttft is not None:
        doc["ttft"] = r.ttft
    doc["think_time"] = r.think_time
    return doc


def _trace_doc(trace: Session) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    parent = [0, 0]
    child = [0, 0]
    subagents = 0
    for item in trace.items:
        if isinstance(item, Request):
            requests.append(_req_doc(item))
            parent[0] += item.in_tokens
            parent[1] += item.out_tokens
            continue
        subagents += 1
        for r in item.requests:
            child[0] += r.in_tokens
            child[1] += r.out_tokens
        requests.append(
            {
                "t": item.t,
                "type": "subagent",
                "agent_id": item.agent_id,
                "subagent_type": item.kind,
                "duration_ms": item.duration_ms,
                "total_tokens": item.total_tokens,
                "tool_use_count": item.tool_use_count,
                "status": "completed",
                "requests": [_req_doc(r) for r in item.requests],
                "models": [item.model],
                "tool_tokens": item.tool_tokens,
                "system_tokens": item.system_tokens,
            }
        )
    top = [x.model for x in trace.items if isinstance(x, Request)]
    return {
        "id": trace.id,
        "models": list(dict.fromkeys([trace.model, *top])),
        "block_size": BLOCK_SIZE,
        "hash_id_scope": "local",
        "tool_tokens": trace.tool_tokens,
        "system_tokens": trace.system_tokens,
        "requests": requests,
        "totals": {
            "parent_tokens": {"input": parent[0], "output": parent[1]},
            "subagent_tokens": {"input": child[0], "output": child[1]},
            "combined_tokens": {"input": parent[0] + child[0], "output": parent[1] + child[1]},
            "subagent_count": subagents,
        },
    }


def trace_name(i: int, n_traces: int) -> str:
    """``trace_0001`` ... (1-based, at least four digits)."""
    return f"trace_{i + 1:0{max(4, len(str(n_traces)))}d}"


FLAT_STREAM = 1  # the flat agents' generator: np.random.default_rng([seed, i, FLAT_STREAM])


def plan_trace(
    i: int, n_traces: int, seed: int, scale: float = 1.0, params: Params = DEFAULT_PARAMS
) -> Session:
    """Trace ``i`` of a corpus, planned, its hash ids assigned."""
    rng = np.random.default_rng([seed, i])
    flat_rng = np.random.default_rng([seed, i, FLAT_STREAM])
    return SessionBuilder(trace_name(i, n_traces), rng, params, scale, flat_rng).build()


def build_trace(
    i: int, n_traces: int, seed: int, scale: float = 1.0, params: Params = DEFAULT_PARAMS
) -> tuple[dict[str, Any], int]:
    """Trace ``i`` of a corpus as a Weka document, and its theoretical hit blocks."""
    trace = plan_trace(i, n_traces, seed, scale, params)
    hits = assign_ids(trace)
    return _trace_doc(trace), hits


def write_file(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _summarize(
    doc: dict[str, Any], hit_blocks: int, json_bytes: int, flat: int = 0
) -> TraceSummary:
    ins: list[int] = []

    def walk(reqs: list[dict[str, Any]]) -> None:
        for r in reqs:
            if r["type"] == "subagent":
                walk(r["requests"])
            else:
                ins.append(r["in"])

    walk(doc["requests"])
    combined = doc["totals"]["combined_tokens"]
    return TraceSummary(
        requests=len(ins),
        input_tokens=combined["input"],
        output_tokens=combined["output"],
        hit_tokens=hit_blocks * BLOCK_SIZE,
        subagents=doc["totals"]["subagent_count"],
        json_bytes=json_bytes,
        in_tokens=np.asarray(ins, dtype=np.int64),
        flat_chains=flat,
    )


def iter_traces(
    out_dir: str | os.PathLike[str],
    n_traces: int,
    seed: int = DEFAULT_SEED,
    scale: float = 1.0,
    params: Params = DEFAULT_PARAMS,
) -> Iterator[TraceSummary]:
    """Write the traces one by one, yielding each one's summary once it is on disk."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for i in range(n_traces):
        trace = plan_trace(i, n_traces, seed, scale, params)
        hits = assign_ids(trace)
        doc = _trace_doc(trace)
        data = orjson.dumps(doc, option=JSON_OPTS)
        write_file(out / f"{doc['id']}.json", data)
        yield _summarize(doc, hits, len(data), flat_chains(trace))
