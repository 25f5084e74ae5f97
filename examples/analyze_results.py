"""Analyse an agentx results directory with DuckDB: no notebook, no agentx import.

    pip install duckdb
    python analyze_results.py results/run1            # tables on stdout
    python analyze_results.py results/run1 --csv out  # also one CSV per table in out/

Reads what `agentx replay -o DIR` writes: ``summary.json`` (the run's figures) and
``requests.parquet`` (one row per replayed request; times in ns, tokens as the server reported
them, null when it did not). Start from these queries to ask your own questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import duckdb

QUERIES = {
    # how latency and caching change as a conversation grows: the agentic-traffic question
    "by_turn": """
        SELECT turn,
               count(*) AS requests,
               round(quantile_cont(ttft_ns, 0.5) / 1e6, 1) AS ttft_p50_ms,
               round(quantile_cont(ttft_ns, 0.9) / 1e6, 1) AS ttft_p90_ms,
               round(avg(prompt_tokens)) AS prompt_tokens_mean,
               round(sum(cached_tokens) / sum(prompt_tokens), 3) AS reported_hit_rate
        FROM requests WHERE ok AND NOT warmup GROUP BY turn ORDER BY turn""",
    # per session: how much of its prompts the server served from cache, and how fast it went
    "by_session": """
        SELECT session_id,
               count(*) AS requests,
               sum(prompt_tokens) AS prompt_tokens,
               round(sum(cached_tokens) / sum(prompt_tokens), 3) AS reported_hit_rate,
               round(sum(theoretical_hit_tokens) / sum(expected_prompt_tokens), 3)
                   AS theoretical_hit_rate,
               round(sum(e2e_ns) / 1e9, 2) AS busy_s
        FROM requests WHERE ok AND NOT warmup GROUP BY session_id ORDER BY prompt_tokens DESC""",
    "slowest": """
        SELECT request_id, session_id, turn, prompt_tokens, cached_tokens,
               round(ttft_ns / 1e6, 1) AS ttft_ms, round(e2e_ns / 1e6, 1) AS e2e_ms
        FROM requests WHERE ok AND NOT warmup ORDER BY ttft_ns DESC LIMIT 5""",
    "errors": """
        SELECT coalesce(error_type, 'unknown') AS error_type, count(*) AS requests,
               any_value(error) AS example
        FROM requests WHERE NOT ok GROUP BY ALL ORDER BY requests DESC""",
}


def headline(summary: dict[str, Any], version: str | None) -> str:
    req, cache, ttft = summary["requests"], summary["cache"], summary["latency_ms"]["ttft"]

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1%}"  # null: the server did not report it

    def ms(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f} ms"

    return (
        f"{summary['endpoint']} ({summary['model']}), measured by agentx {version or '?'}\n"
        f"requests {req['total']} (ok {req['ok']}, errors {req['errors']}), "
        f"TTFT p50 {ms(ttft['p50'])} / p99 {ms(ttft['p99'])}\n"
        f"prefix-cache hit rate: reported {pct(cache['reported_hit_rate'])}, "
        f"/metrics {pct(cache['server_metrics_hit_rate'])}, "
        f"theoretical {pct(cache['theoretical_hit_rate'])}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a directory written by `agentx replay -o`")
    ap.add_argument("--csv", type=Path, help="also write one CSV per table into this directory")
    args = ap.parse_args()
    requests_file = args.results / "requests.parquet"
    summary_file = args.results / "summary.json"
    if not (requests_file.is_file() and summary_file.is_file()):
        print(f"{args.results}: not an agentx results directory", file=sys.stderr)
        return 1

    con = duckdb.connect()
    con.read_parquet(str(requests_file)).create_view("requests")
    rows = con.execute(
        "SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = 'agentx.version'",
        [str(requests_file)],
    ).fetchall()
    print(headline(json.loads(summary_file.read_text()), rows[0][0] if rows else None))

    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
    for name, sql in QUERIES.items():
        rel = con.sql(sql)
        print(f"\n{name}")
        rel.show(max_width=120)
        if args.csv:
            rel.write_csv(str(args.csv / f"{name}.csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
