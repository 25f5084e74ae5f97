"""The dataset card, ``README.md``: YAML front matter for the Hugging Face hub, then the text a
reader needs, rendered from the manifest alone (:func:`render_card`), so ``verify`` renders its
front matter and statistics block from the figures it recomputed and compares. The fields are
docs/datasets.md."""

from __future__ import annotations

import json
from collections.abc import Mapping

from agentx import DISTRIBUTION
from agentx.core.percentiles import STATS, P
from agentx.dataset.layout import (
    DEFAULT_CONFIG,
    MOONCAKE_CONFIG,
    PLOTS,
    WEKA_CONFIG,
    WEKA_FILE,
)
from agentx.dataset.plots import PLOTS as PLOT_TITLES
from agentx.results.dataset import ConfigEntry, Manifest

TAGS = ("agentx", "llm-inference", "kv-cache", "prefix-caching", "coding-agents", "traces")
TASK_CATEGORIES = ("text-generation",)
REPO_PLACEHOLDER = "ORG/NAME"
STATS_BEGIN = "<!-- agentx:stats -->"
STATS_END = "<!-- /agentx:stats -->"
# Hugging Face's size buckets, by the default config's rows
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(rows: int) -> str:
    return next((label for limit, label in SIZES if rows < limit), "1M<n<10M")


def _q(text: str) -> str:
    """A YAML scalar: JSON's quoting (YAML reads JSON strings as they are)."""
    return json.dumps(text, ensure_ascii=False)


def front_matter(m: Manifest) -> str:
    c = m.card
    lines = ["---", f"license: {_q(c.license)}", f"pretty_name: {_q(c.pretty_name)}"]
    lines.append("task_categories:")
    lines += [f"- {_q(t)}" for t in c.task_categories]
    lines.append("tags:")
    lines += [f"- {_q(t)}" for t in c.tags]
    default = m.config(m.default_config)
    lines += ["size_categories:", f"- {size_category(default.rows if default else 0)}"]
    lines.append("configs:")
    for cfg in m.configs:
        lines += [f"- config_name: {_q(cfg.name)}", "  data_files:", f"  - split: {m.split}"]
        lines.append(f"    path: {_q(_pattern(cfg))}")
        if cfg.name == m.default_config:
            lines.append("  default: true")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _pattern(cfg: ConfigEntry) -> str:
    """A config's files as a pattern (``data/all/train-*.parquet``), or its one file."""
    if len(cfg.files) == 1:
        return cfg.files[0]
    head = cfg.files[0].rsplit("/", 1)[0]
    return f"{head}/*.parquet"


def _n(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _row(label: str, p: P, digits: int = 0) -> str:
    return f"| {label} | " + " | ".join(_n(p.stat(k), digits) for k in STATS) + " |"


def stats_block(m: Manifest) -> str:
    """The statistics section's table, between its markers (what ``verify`` compares)."""
    s, f = m.stats, m.figures
    rate = _pct(s.theoretical_hit_rate)
    lines = [
        STATS_BEGIN,
        f"Sessions: **{s.sessions:,}**, threads: **{s.threads:,}**, requests (model calls): "
        f"**{s.requests:,}**"
        + (f", rows that are not model calls: {s.non_model_rows:,}" if s.non_model_rows else "")
        + ".",
        "",
        f"Theoretical prefix-cache hit rate: **{rate}**: an unbounded cache replaying every "
        f"request in trace order, block size {s.block_size} ({s.tokenizer} tokens for text "
        "rows; hash-only rows at their own block size), vLLM's rules.",
        "",
        f"Total tokens: input {_n(s.totals.input_tokens)}, output {_n(s.totals.output_tokens)}"
        + (
            f", cached (as the provider reported) {_n(s.totals.cached_tokens)}"
            if s.totals.cached_tokens is not None
            else ""
        )
        + ".",
        "",
        "| per request | " + " | ".join(STATS) + " |",
        "|---|" + "---:|" * len(STATS),
        _row("input tokens" + (f" ({s.tokens_source})" if s.tokens_source else ""), s.input_tokens),
        _row("output tokens", s.output_tokens),
        _row("think time (s)", s.think_time_s, 1),
        "",
        "| per thread or session | " + " | ".join(STATS) + " |",
        "|---|" + "---:|" * len(STATS),
        _row("turns per thread", f.turns_per_thread),
        _row("requests per session", f.requests_per_session),
        _row("session duration (s)", f.session_duration_s, 1),
        _row("peak context per session (tokens)", f.peak_context_tokens),
        STATS_END,
    ]
    return "\n".join(lines) + "\n"


def _counts(title: str, counts: Mapping[str, int]) -> list[str]:
    rows = [f"| {title} | requests |", "|---|---:|"]
    rows += [f"| `{k}` | {v:,} |" for k, v in counts.items()]
    return rows


SCHEMA_ROWS = (
    (
        "session_id, thread_id, request_id",
        "string",
        "a session, one conversation in it, one exchange",
    ),
    ("parent_request_id", "string", "the previous request of the same thread (null: the first)"),
    (
        "api",
        "string",
        "openai.chat, openai.responses, anthropic.messages, gemini.generate_content, other",
    ),
    ("model, agent, client", "string", "as requested; the agent recognised; the User-Agent"),
    (
        "request_json, request_system, request_tools, conversation_delta",
        "string, JSON",
        "the body; a row stores the messages it appends to conversation_base_id's first conversation_base_len",
    ),
    (
        "response_text, response_reasoning, response_tool_calls",
        "string (JSON)",
        "what the model answered",
    ),
    (
        "prompt_tokens, completion_tokens, cached_tokens",
        "int64, tokens",
        "usage as the provider reported it (null: unknown)",
    ),
    ("start_wall_ns", "int64, ns since the Unix epoch", "wall clock: orders and labels rows"),
    (
        "ttfb_ns, ttft_ns, e2e_ns",
        "int64, ns",
        "first byte, first token, last byte, from the request's start",
    ),
    (
        "think_time_s, api_time_s",
        "float64, seconds",
        "the thread's previous response end to this request; an import's recorded server time",
    ),
    (
        "hash_ids, hash_ids_delta, hash_block_size",
        "list<int64>, int32 tokens",
        "hash-only rows: block ids (delta-encoded against hash_ids_base_id) of hash_block_size-token blocks",
    ),
    (
        "flags",
        "list<string>",
        "subagent, side_call, compaction, retry, fork, secret_redacted, weka.*, ...",
    ),
)


def render_card(m: Manifest) -> str:
    """The whole ``README.md`` of a manifest (its ``files`` are not read)."""
    c, s, p = m.card, m.stats, m.privacy
    repo = REPO_PLACEHOLDER if c.repo is None else c.repo
    out = [front_matter(m), f"# {c.pretty_name}", ""]
    if c.description:
        out += [c.description, ""]
    out += [
        f"Coding-agent LLM traffic in the agentx trace format, packed by {DISTRIBUTION} "
        f"{m.agentx_version} (`agentx dataset pack`) on {m.created_at[:10]}. `manifest.json` "
        "holds the size and sha256 of every file and the figures below; "
        f"`agentx dataset verify hf://datasets/{repo}@<revision>` checks them all. Pin a "
        "revision when you replay or cite it.",
        "",
        "## What was captured",
        "",
        f"Requests from {m.captured.first_date or 'unknown'} to {m.captured.last_date or 'unknown'} "
        "(UTC; unknown when the trace's clock is an offset, as an import's is).",
        "",
        *_counts("agent", m.captured.agents),
        "",
        *_counts("API family", s.apis),
        "",
        *_counts("model", m.captured.models),
        "",
        "## Configs",
        "",
        "| config | format | rows | sessions | requests | files | what |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for cfg in m.configs:
        sessions = "-" if cfg.sessions is None else f"{cfg.sessions:,}"
        out.append(
            f"| `{cfg.name}` | {cfg.format} | {cfg.rows:,} | {sessions} | {cfg.requests:,} | "
            f"{len(cfg.files)} | {cfg.description} |"
        )
    out += [
        "",
        "```python",
        "import datasets",
        f'rows = datasets.load_dataset("{repo}", "{DEFAULT_CONFIG}", split="{m.split}", '
        'revision="<revision>")',
        "```",
        "",
        "## Schema",
        "",
        f"The agentx configs are agentx trace files, format `{m.trace_format}` (its reference: "
        "agentx's docs/trace-format.md): one row per exchange, in capture order. Durations are "
        "integer **nanoseconds** (`*_ns`) except `think_time_s` and `api_time_s` (**seconds**); "
        "unknown is null, never 0. A row's body is delta-encoded: read the files with agentx "
        "(`agentx stats`, `replay`, `simulate` take the directory) to get whole request bodies.",
        "",
        "| column | type, unit | meaning |",
        "|---|---|---|",
        *(f"| `{n}` | {t} | {w} |" for n, t, w in SCHEMA_ROWS),
        "",
    ]
    if m.config(WEKA_CONFIG) is not None:
        out += [
            f"`{WEKA_FILE}` (and config `{WEKA_CONFIG}`, its lines as Parquet rows): one Weka "
            "trace per line, the format of "
            "`semianalysisai/cc-traces-weka-*`: `t`, `think_time`, `api_time` and `ttft` in "
            "**seconds** (`t` from the session's first request; a subagent's records from its "
            "own start), `in`/`out` tokens, `hash_ids` of `block_size`-token blocks.",
            "",
        ]
    if m.config(MOONCAKE_CONFIG) is not None:
        out += [
            "`mooncake.jsonl` (and config `mooncake`, its lines as Parquet rows): one model call "
            "per line, Mooncake's format: "
            "`timestamp` in **milliseconds** from the first request, `input_length`, "
            "`output_length` (tokens), `hash_ids` of 512-token blocks (the last one partial). "
            "No sessions: each line carries its whole prompt.",
            "",
        ]
    out += [
        "## Block hashes",
        "",
        f"Hash-only rows name their prompt by block ids of `hash_block_size` tokens "
        f"(this dataset: block size {s.block_size} for the hit rate below). Ids are "
        "session-local: an imported session keeps its own ids (offset per session so that two "
        "sessions never share one), a text session's export gives its blocks dense ids in order "
        "of first use (`hash_id_scope: local`), so an id says nothing of the text. Mooncake "
        "ids are numbered across the whole file. Text rows carry no ids: a replay hashes their "
        "tokens with chained block hashes (vLLM's rules). `agentx replay --salt` (the default) "
        "puts a cache-bust marker per session tree in the first user message, so replayed "
        "sessions share only what the trace's sessions shared.",
        "",
        "## Statistics",
        "",
        f"Of the `{m.default_config}` config (`agentx stats` on it prints the same "
        "`agentx.stats/1` figures).",
        "",
        stats_block(m),
    ]
    if m.plots:
        out += ["## Plots", ""]
        for plot in m.plots:
            name = plot.rsplit("/", 1)[-1].removesuffix(".png")
            out += [f"![{PLOT_TITLES.get(name, name)}]({plot})", ""]
    scan = p.secret_scan
    text = {
        "none": "none: the rows are hash-only (block ids and token counts, no text)",
        "synthetic": "synthetic only: the text was replaced token for token (`agentx anonymize`) "
        "or synthesised from block ids",
        "original": "**original text**, packed on purpose (`--with-text`)",
    }[p.text]
    found = (
        "none found" if not scan.found else f"**{scan.found} found**: " + "; ".join(scan.findings)
    )
    out += [
        "## Privacy",
        "",
        f"- Text: {text}.",
        f"- Scrubbed: {p.scrubbed_by or 'not recorded by the input'}; anonymized: "
        f"{p.anonymized_by or 'not recorded by the input'}.",
        *(f"- Checked before packing: {check}." for check in p.gate),
        f"- Secret scan of the packed data files ({scan.files} files, {scan.values:,} text "
        f"values; families: {', '.join(scan.families)}): {found}.",
        "",
        "## Replay",
        "",
        "```bash",
        "# agentx (pip install 'agentx-replay[hf]'): the default config, sessions as recorded",
        f"agentx replay hf://datasets/{repo}@<revision> --endpoint http://localhost:8000 "
        "--scenario agentx -o results/",
        f"agentx simulate hf://datasets/{repo}@<revision>",
    ]
    if m.config(WEKA_CONFIG) is not None:
        out += [
            "# SemiAnalysis agentx-harness (an AIPerf fork): the Weka rows",
            f"agentx profile --scenario agentx --unsafe-override --hf-weka-dataset {repo} "
            f"--hf-subset {WEKA_CONFIG} -m MODEL --url http://localhost:8000 --endpoint-type chat",
        ]
    if m.config(MOONCAKE_CONFIG) is not None:
        out += [
            "# AIPerf: the Mooncake lines",
            "aiperf profile --custom-dataset-type mooncake_trace --input-file mooncake.jsonl "
            "-m MODEL --url http://localhost:8000 --endpoint-type chat",
            "# vllm bench serve: the Mooncake lines on their timestamps",
            "vllm bench serve --dataset-name timed_trace --dataset-path mooncake.jsonl "
            "--timed-trace-chunk-hash-size 512 --timed-trace-sec-multiplier 0.001 --model MODEL",
        ]
    key = repo.replace("/", "_").replace("-", "_")
    out += [
        "```",
        "",
        "## Citation",
        "",
        "```bibtex",
        f"@misc{{{key},",
        f"  title = {{{{{c.pretty_name}}}}},",
        f"  year = {{{m.created_at[:4]}}},",
        f"  howpublished = {{\\url{{https://huggingface.co/datasets/{repo}}}}},",
        f"  note = {{Packed with {DISTRIBUTION} {m.agentx_version}; revision <revision>}}",
        "}",
        "```",
    ]
    return "\n".join(out) + "\n"


def plot_paths(names: list[str]) -> tuple[str, ...]:
    return tuple(f"{PLOTS}/{n}.png" for n in names)
