"""A whole corpus: ``generate_corpus``, ``ensure_corpus`` and their summary."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .emit import iter_traces, trace_name, write_file
from .params import DEFAULT_PARAMS, DEFAULT_SEED, Params

MANIFEST = "MANIFEST"  # not *.json: Weka readers only take *.json files
GENERATOR_VERSION = 2  # 2: flat parallel agents


@dataclass(frozen=True)
class CorpusSummary:
    """What :func:`generate_corpus` wrote."""

    out_dir: Path
    traces: int
    requests: int
    input_tokens: int
    output_tokens: int
    hit_tokens: int
    subagents: int
    json_bytes: int
    input_percentiles: dict[str, float]
    seconds: float
    flat_chains: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out_dir"] = str(self.out_dir)
        d["hit_rate"] = self.hit_rate
        d["requests_per_trace"] = self.requests / self.traces if self.traces else 0.0
        return d


def _percentiles(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "mean": float(values.mean()),
        "max": float(values.max()),
    }


def _manifest(n_traces: int, seed: int, scale: float, params: Params) -> dict[str, Any]:
    return {
        "generator": "scripts/gen_weka_corpus.py",
        "version": GENERATOR_VERSION,
        "traces": n_traces,
        "seed": seed,
        "scale": scale,
        "params": repr(params),
    }


def generate_corpus(
    out_dir: str | os.PathLike[str],
    n_traces: int,
    seed: int = DEFAULT_SEED,
    scale: float = 1.0,
    *,
    params: Params = DEFAULT_PARAMS,
    progress: Callable[[int, int], None] | None = None,
) -> CorpusSummary:
    """Write ``n_traces`` Weka JSON sessions into ``out_dir`` (created; existing
    ``trace_*.json`` of the same names are replaced) plus a ``MANIFEST`` (JSON, not ``*.json``).

    ``scale`` multiplies every token count (prompts, growth, outputs, tools and system prompts):
    1.0 is the real corpus's size, 0.1 a ten times lighter corpus of the same shape (for tests).
    Deterministic: trace ``i`` depends only on ``(seed, i, scale, params)``.
    """
    if n_traces < 1:
        raise ValueError("n_traces must be at least 1")
    if scale <= 0:
        raise ValueError("scale must be positive")
    t0 = time.perf_counter()
    totals = dict(
        requests=0,
        input_tokens=0,
        output_tokens=0,
        hit_tokens=0,
        subagents=0,
        json_bytes=0,
        flat_chains=0,
    )
    ins: list[np.ndarray] = []
    for k, s in enumerate(iter_traces(out_dir, n_traces, seed, scale, params), 1):
        for key in totals:
            totals[key] += getattr(s, key)
        ins.append(s.in_tokens)
        if progress is not None:
            progress(k, n_traces)
    out = Path(out_dir)
    write_file(
        out / MANIFEST,
        orjson.dumps(_manifest(n_traces, seed, scale, params), option=orjson.OPT_INDENT_2),
    )
    return CorpusSummary(
        out_dir=out,
        traces=n_traces,
        input_percentiles=_percentiles(np.concatenate(ins)),
        seconds=time.perf_counter() - t0,
        **totals,
    )


def ensure_corpus(
    out_dir: str | os.PathLike[str],
    n_traces: int,
    seed: int = DEFAULT_SEED,
    scale: float = 1.0,
    *,
    params: Params = DEFAULT_PARAMS,
) -> bool:
    """Generate the corpus unless ``out_dir`` already holds this very one (same manifest and
    every trace file present). Returns whether it generated. For benchmarks that reuse a corpus
    between runs."""
    out = Path(out_dir)
    try:
        have = orjson.loads((out / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        have = None
    want = orjson.loads(orjson.dumps(_manifest(n_traces, seed, scale, params)))
    names = (trace_name(i, n_traces) + ".json" for i in range(n_traces))
    if have == want and all((out / n).is_file() for n in names):
        return False
    generate_corpus(out, n_traces, seed, scale, params=params)
    return True
