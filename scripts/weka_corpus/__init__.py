"""Realistic Weka-format agent corpora (Claude Code sessions as 64-token block hashes).

``generate_corpus(out_dir, n_traces, seed)`` writes ``trace_0001.json`` ... one session per file,
in the format of the samples in ``agentx/data/weka`` (kv-cache-tester ``traces/``): ``block_size``
64, ``hash_id_scope`` local, requests with ``t``, ``type`` (``n`` non-streaming, ``s``
streaming), ``model``, ``in``, ``out``, ``hash_ids``, ``input_types``, ``output_types``,
``stop``, ``api_time``, ``ttft`` (streamed rows), ``think_time``; ``subagent`` entries with
nested requests; ``totals``. Trace ``i`` depends only on ``(seed, i, scale, params)``, so a
2,800-trace corpus starts with the 700 traces of the 700-trace corpus of the same seed. Each
file is written (to a temporary name, then renamed) as soon as it is built: memory holds one
session at a time.

The model, per session (:mod:`.session`): a main thread whose prompt grows turn by turn
(previous prompt + previous output + new tool results or user text), its hash ids chained (a
request repeats the previous one's blocks, sometimes re-hashing the last one to three, then
appends fresh ids); auto-compaction near the context window (the prompt restarts from the tools
+ system prefix plus a summary); Task tool calls that spawn subagents (one or several in
parallel), whose threads start from a per-type tools + system prefix shared by the subagents of
that type, while the parent waits and then gets their reports as its next tool result; flat
parallel agents recorded among the main requests (:mod:`.flat`: inline and parallel agents,
worker groups, reductions, sidecars), in 11 % of the sessions. The parameters and the fixture
measurements behind them are in :mod:`.params`; the resulting corpora are described in
docs/corpus.md.

Used by ``scripts/gen_weka_corpus.py`` (CLI) and by benchmarks and tests (put ``scripts/`` on
``sys.path``).
"""

from .corpus import MANIFEST, CorpusSummary, ensure_corpus, generate_corpus
from .emit import TraceSummary, build_trace, iter_traces, plan_trace, trace_name
from .params import BLOCK_SIZE, DEFAULT_PARAMS, DEFAULT_SEED, ApiModel, Params

__all__ = [
    "BLOCK_SIZE",
    "DEFAULT_PARAMS",
    "DEFAULT_SEED",
    "MANIFEST",
    "ApiModel",
    "CorpusSummary",
    "Params",
    "TraceSummary",
    "build_trace",
    "ensure_corpus",
    "generate_corpus",
    "iter_traces",
    "plan_trace",
    "trace_name",
]
