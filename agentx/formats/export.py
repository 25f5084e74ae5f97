"""Writing traces for other tools: Mooncake JSONL (here) and Weka JSON
(:mod:`agentx.formats.weka.write`).

- Mooncake: one line per model call, ``{"timestamp" (ms since the first), "input_length",
  "output_length", "hash_ids"}`` with 512-token blocks, the last one partial (``ceil(n/512)``
  ids), cut as :mod:`agentx.formats.blocks` says. No ``session_id``: AIPerf reads a session's
  lines as turns that append to each other, while these lines each carry their whole prompt.
- Weka: one file per session; an imported Weka session comes back exactly as it was read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import orjson

from agentx.core.models import Exchange
from agentx.core.outputs import atomic_output
from agentx.formats.blocks import IdMapper, block_keys, exchange_tokens, output_tokens
from agentx.formats.weka.write import WEKA_BLOCK_SIZE, weka_document, write_weka
from agentx.prefixcache.theory import is_model_call

MOONCAKE_BLOCK_SIZE = 512


# -- Mooncake ------------------------------------------------------------------------------


def write_mooncake(
    exchanges: Iterable[Exchange],
    path: str | os.PathLike[str],
    *,
    block_size: int = MOONCAKE_BLOCK_SIZE,
    force: bool = True,
) -> int:
    """Stream model calls to a Mooncake JSONL file; returns the number of lines. The file
    replaces ``path`` once complete (an existing one only with ``force``)."""
    mapper = IdMapper(0)
    t0: int | None = None
    n = 0
    with atomic_output(path, force=force) as tmp, open(tmp, "wb") as fh:
        for ex in exchanges:
            if not is_model_call(ex):
                continue
            start = ex.timing.start_wall_ns
            t0 = start if t0 is None else t0
            length, keys = block_keys(ex, block_size, partial=True)
            row = {
                "timestamp": max(0, round((start - t0) / 1e6)),
                "input_length": length,
                "output_length": output_tokens(ex),
                "hash_ids": mapper(keys),
            }
            fh.write(orjson.dumps(row) + b"\n")
            n += 1
    return n


__all__ = [
    "MOONCAKE_BLOCK_SIZE",
    "WEKA_BLOCK_SIZE",
    "block_keys",
    "exchange_tokens",
    "output_tokens",
    "weka_document",
    "write_mooncake",
    "write_weka",
]
