"""The queries of docs/trace-format.md work without agentx (pyarrow, polars, DuckDB)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from agentx.core.examples import example_path
from agentx.formats.convert import convert
from agentx.store import read_trace

EXAMPLE = str(example_path("example"))


def bodies(path: str) -> Iterator[tuple[str, Any]]:
    """The doc's dozen-line rebuild, verbatim."""
    convs = {}
    for row in pq.read_table(path).to_pylist():  # file order: a row's base comes before it
        if row["request_key_order"] is None:  # the body was not a JSON object
            yield row["request_id"], json.loads(row["request_json"])
            continue
        parts = json.loads(row["request_params"])
        system_key = "instructions" if row["api"] == "openai.responses" else "system"
        if row["request_tools"] is not None:
            parts["tools"] = json.loads(row["request_tools"])
        if row["request_system"] is not None:
            parts[system_key] = json.loads(row["request_system"])
        if row["conversation_key"] is not None:
            base_id = row["conversation_base_id"]
            base = convs[base_id][: row["conversation_base_len"]] if base_id else []
            convs[row["request_id"]] = base + json.loads(row["conversation_delta"])
            parts[row["conversation_key"]] = convs[row["request_id"]]
        yield (
            row["request_id"],
            {k: parts[k] for k in json.loads(row["request_key_order"]) if k in parts},
        )


def test_python_rebuild_equals_the_store() -> None:
    ref = {ex.request_id: ex.request for ex in read_trace(EXAMPLE)}
    got = dict(bodies(EXAMPLE))
    assert json.dumps(got) == json.dumps(ref)  # same keys, same order, same values


def test_pyarrow_metadata_and_summary() -> None:
    meta = pq.read_schema(EXAMPLE).metadata
    assert meta[b"agentx.format"] == b"agentx.trace/1.2"
    assert json.loads(meta[b"agentx.metadata"])["generator"] == "scripts/make_example_trace.py"
    t = pq.read_table(EXAMPLE, columns=["api", "prompt_tokens", "cached_tokens"])
    summary = t.group_by("api").aggregate(
        [("prompt_tokens", "sum"), ("cached_tokens", "sum"), ("api", "count")]
    )
    assert sum(summary.column("api_count").to_pylist()) == t.num_rows


def test_polars_per_thread() -> None:
    df = pl.read_parquet(EXAMPLE)
    per = (
        df.group_by("session_id", "thread_id")
        .agg(
            pl.len().alias("requests"),
            pl.col("prompt_tokens").max().alias("max_prompt"),
            pl.col("think_time_s").median().alias("think_p50_s"),
            (pl.col("ttft_ns").median() / 1e6).alias("ttft_p50_ms"),
        )
        .sort("session_id", "thread_id")
    )
    assert per["requests"].sum() == df.height
    assert per["ttft_p50_ms"].min() > 0


def test_duckdb_recursive_rebuild_equals_the_store() -> None:
    exs = read_trace(EXAMPLE)
    ref = {
        ex.request_id: ex.request["input" if ex.api == "openai.responses" else "messages"]
        for ex in exs
    }
    con = duckdb.connect()
    summary = con.sql(
        f"SELECT api, count(*) AS requests, sum(prompt_tokens) AS input_tokens, "
        f"sum(cached_tokens) AS cached_tokens, round(median(ttft_ns) / 1e6) AS ttft_p50_ms "
        f"FROM '{EXAMPLE}' GROUP BY api ORDER BY api"
    ).fetchall()
    assert sum(r[1] for r in summary) == len(exs)
    meta = dict(
        con.sql(
            f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{EXAMPLE}')"
        ).fetchall()
    )
    assert meta["agentx.format"] == "agentx.trace/1.2"
    rows = con.sql(
        f"""
        WITH RECURSIVE conv(request_id, items) AS (
            SELECT request_id, json_extract(conversation_delta, '$[*]')
            FROM '{EXAMPLE}'
            WHERE conversation_key IS NOT NULL AND conversation_base_id IS NULL
          UNION ALL
            SELECT r.request_id,
                   list_concat(c.items[1:r.conversation_base_len],
                               json_extract(r.conversation_delta, '$[*]'))
            FROM '{EXAMPLE}' r JOIN conv c ON r.conversation_base_id = c.request_id
        )
        SELECT request_id, len(items) AS n_items, to_json(items) AS messages FROM conv
        """
    ).fetchall()
    assert len(rows) == len(ref)
    for request_id, n_items, messages in rows:
        assert n_items == len(ref[request_id])
        assert json.loads(messages) == ref[request_id]


# -- hash-only rows (v1.1): the block ids, rebuilt from their deltas --------------------------

HASH_IDS_SQL = """
WITH RECURSIVE ids(request_id, hash_ids) AS (
    SELECT request_id, hash_ids_delta
    FROM '{path}'
    WHERE hash_ids_delta IS NOT NULL AND hash_ids_base_id IS NULL
  UNION ALL
    SELECT r.request_id, list_concat(i.hash_ids[1:r.hash_ids_base_len], r.hash_ids_delta)
    FROM '{path}' r JOIN ids i ON r.hash_ids_base_id = i.request_id
)
SELECT request_id, hash_ids FROM ids
"""


@pytest.fixture(scope="module")
def hash_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("weka") / "weka.parquet"
    convert(example_path("weka"), path)
    return str(path)


def test_duckdb_rebuilds_the_block_ids_of_hash_only_rows(hash_only: str) -> None:
    ref = {ex.request_id: list(ex.hash_ids or ()) for ex in read_trace(hash_only)}
    rows = duckdb.connect().sql(HASH_IDS_SQL.format(path=hash_only)).fetchall()
    assert dict(rows) == ref and len(rows) == len(ref)


def test_polars_reads_the_delta_columns(hash_only: str) -> None:
    df = pl.read_parquet(hash_only, columns=["request_id", "hash_ids_base_len", "hash_ids_delta"])
    stored = df["hash_ids_delta"].list.len().sum()
    full = sum(len(ex.hash_ids or ()) for ex in read_trace(hash_only))
    assert df.height == 76 and 0 < stored < full / 5  # each turn stores what it appends
