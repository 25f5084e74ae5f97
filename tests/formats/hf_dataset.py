"""A tiny Hugging Face dataset of Weka traces, built at test time from the bundled samples:
``traces.jsonl`` (one trace per line, as ``semianalysisai/cc-traces-weka-*`` publish it) and a
dataset card, or the same rows as Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentx.core.examples import example_path

CARD = """---
license: apache-2.0
configs:
- config_name: default
  data_files: traces.jsonl
---
Two Weka traces (agentx's bundled samples) in the layout of semianalysisai/cc-traces-weka-*.
"""


def weka_docs() -> list[dict[str, Any]]:
    files = sorted(example_path("weka").glob("*.json"))
    return [json.loads(f.read_text()) for f in files]


def make_hf_dataset(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(doc) for doc in weka_docs()]
    (directory / "traces.jsonl").write_text("\n".join(lines) + "\n")
    (directory / "README.md").write_text(CARD)
    return directory


def make_parquet_rows(path: Path, *, requests_as: str = "json") -> Path:
    """The rows as Parquet: ``requests`` as JSON text per element (what ``datasets`` stores for
    its ``Json`` feature) or as inferred structs (absent fields become nulls)."""
    rows = weka_docs()
    if requests_as == "json":
        rows = [{**r, "requests": [json.dumps(q) for q in r["requests"]]} for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
