"""`agentx merge` / `agentx report DIR... -o`: shards combined from their rows, never averaged."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from metrics.factory import MS, S, failed, streamed
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import AgentxError, UsageError
from agentx.core.percentiles import percentiles
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics.prometheus.server_metrics import ServerMetrics
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.theory import TheoryRow
from agentx.report.merge import merge_results
from agentx.report.results_dir import load_results, write_results
from agentx.results.summary.server import CounterSeries

runner = CliRunner()
BS = 16
WALL0 = 1_800_000_000 * S


def shard_dir(
    path: Path,
    shard: str,
    records: list[RequestRecord],
    *,
    perf0: int = 0,
    wall0: int = WALL0,
    theory: list[TheoryRow] | None = None,
    server: ServerMetrics | None = None,
    slo: str | None = None,
    clock: bool = True,
    config_extra: dict[str, Any] | None = None,
) -> Path:
    """A results directory as `agentx replay --shard` writes it (rows on the shard's clock)."""
    config = {"shard": shard, "slo": slo, "concurrency": 2, "output_dir": str(path)}
    config.update(config_extra or {})
    end = max(lat.end_ns(r) for r in records) if records else perf0
    run = RunInfo(
        endpoint="http://sim:8000",
        model="m",
        started_at="2027-01-15T08:00:00+00:00",
        duration_s=(end - perf0) / S,
        sessions_started=2,
        sessions_completed=1,
        client_cpu_percent=40.0 if shard.startswith("0") else 70.0,
        config=config,
        started_perf_ns=perf0 if clock else None,
        started_wall_ns=wall0 if clock else None,
    )
    summary = build_summary(run, records, server, parse_slo(slo) if slo else [], BS)
    write_results(path, summary, records, theory)
    return path


def shard_records(
    shard: int, perf0: int, ttfts: list[float], step_s: float = 1.0
) -> list[RequestRecord]:
    return [
        streamed(
            t,
            [10.0, 12.0],
            request_id=f"{shard}.0.{k}",
            session_id=f"s{shard}",
            sent_ns=perf0 + int(k * step_s * S),
            prompt_tokens=1000 + k,
            completion_tokens=3,
            cached_tokens=500,
        )
        for k, t in enumerate(ttfts)
    ]


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, list[RequestRecord]]:
    # shard 0's perf clock starts at 5 s, shard 1's at 900 s; wall clocks 2 s apart
    r0 = shard_records(0, 5 * S, [100, 200, 300, 400])
    r1 = [
        *shard_records(1, 900 * S, [150, 250, 1000], step_s=2.0),
        failed(request_id="1.0.9", session_id="s1", sent_ns=907 * S),
    ]
    a = shard_dir(tmp_path / "a", "0/2", r0, perf0=5 * S, wall0=WALL0)
    b = shard_dir(tmp_path / "b", "1/2", r1, perf0=900 * S, wall0=WALL0 + 2 * S)
    return a, b, r0 + r1


def test_merged_figures_come_from_the_union_of_the_rows(
    two: tuple[Path, Path, list[RequestRecord]], tmp_path: Path
) -> None:
    a, b, rows = two
    res = merge_results([a, b], tmp_path / "m")
    s = res.summary.to_json()
    ok = [r for r in rows if r.ok]
    assert s["requests"] == {**s["requests"], "total": 8, "ok": 7, "errors": 1}
    assert s["tokens"]["input"] == sum(r.prompt_tokens or 0 for r in ok)
    assert s["tokens"]["output"] == 21
    assert s["tokens"]["cached"] == 3500
    for key, fn in (("ttft", lat.ttft_ms), ("e2e", lat.e2e_ms)):
        assert s["latency_ms"][key] == percentiles(lat.known(fn, ok)).to_json()
    assert s["latency_ms"]["itl"] == percentiles(lat.pooled_itl_ms(ok)).to_json()
    # never averaged averages: the mean TTFT is over the 7 rows, not the mean of 2 shard means
    assert s["latency_ms"]["ttft"]["mean"] == pytest.approx(
        sum(r.ttft_ns or 0 for r in ok) / 7 / MS
    )
    assert s["sessions"] == {"started": 4, "completed": 2}
    assert s["client"] == {"cpu_percent": 70.0, "saturated": False}
    assert [m["shard"] for m in s["merged_from"]] == ["0/2", "1/2"]
    assert s["config"]["shard"] == ["0/2", "1/2"]
    assert s["config"]["output_dir"] == [str(a), str(b)]  # options the shards disagree on


def test_throughput_is_over_the_union_window_on_the_wall_clock(
    two: tuple[Path, Path, list[RequestRecord]], tmp_path: Path
) -> None:
    a, b, _ = two
    s = merge_results([a, b], tmp_path / "m").summary.to_json()
    # shard 0 sends at wall 0..3 s; shard 1 at wall 2, 4, 6 s (1 s TTFT at 6 s) and fails at 9 s:
    # the measured window runs from wall 0 to the last finish of any shard
    s_rows = merge_results([a, b]).records
    assert lat.span_s(s_rows) == pytest.approx(9.0)
    assert s["throughput"]["requests_per_s"] == pytest.approx(7 / 9.0)
    _, merged_rows = load_results(tmp_path / "m")
    assert min(r.sent_ns for r in merged_rows) == WALL0
    span = lat.span_s([r for r in merged_rows if not r.warmup])
    assert s["throughput"]["requests_per_s"] == pytest.approx(7 / span)
    assert s["clock"] == {"perf_ns": WALL0, "wall_ns": WALL0}
    assert s["duration_s"] == pytest.approx(2 + (907 - 900))


def test_merged_directory_round_trips_and_merges_again(
    two: tuple[Path, Path, list[RequestRecord]], tmp_path: Path
) -> None:
    a, b, _ = two
    merge_results([a], tmp_path / "ma")
    once = merge_results([a, b]).summary.to_json()
    again = merge_results([tmp_path / "ma", b]).summary.to_json()
    for key in ("requests", "tokens", "latency_ms", "throughput", "duration_s", "merged_from"):
        if key == "merged_from":
            assert [m["shard"] for m in again[key]] == [m["shard"] for m in once[key]]
        else:
            assert again[key] == once[key], key


def test_the_same_shard_twice_is_refused(two: tuple[Path, Path, list[RequestRecord]]) -> None:
    a, _, _ = two
    with pytest.raises(UsageError, match="shard 0/2 is in both"):
        merge_results([a, a])


def test_different_splits_are_refused(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [100]))
    b = shard_dir(tmp_path / "b", "1/3", shard_records(1, 0, [100]))
    with pytest.raises(UsageError, match="different splits"):
        merge_results([a, b])


def test_a_missing_shard_is_a_warning(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/3", shard_records(0, 0, [100]))
    c = shard_dir(tmp_path / "c", "2/3", shard_records(2, 0, [100]))
    res = merge_results([a, c])
    assert any("merging 2 of 3 shards: 1/3 missing" in w for w in res.warnings)


def test_colliding_request_ids_are_refused(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [100]))
    b = shard_dir(tmp_path / "b", "1/2", shard_records(0, 0, [100]))  # ids 0.0.k again
    with pytest.raises(AgentxError, match=r"request id 0\.0\.0 is in both"):
        merge_results([a, b])


def test_a_directory_without_rows_is_refused(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [100]))
    (a / "requests.parquet").unlink()
    with pytest.raises(AgentxError, match=r"no requests\.parquet"):
        merge_results([a])


def test_different_block_sizes_are_refused(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [100]))
    b = shard_dir(tmp_path / "b", "1/2", shard_records(1, 0, [100]))
    s = json.loads((b / "summary.json").read_text())
    s["cache"]["block_size"] = 32
    (b / "summary.json").write_text(json.dumps(s))
    with pytest.raises(AgentxError, match="different block sizes"):
        merge_results([a, b])


def theory_rows(shard: int, prompts: list[list[int]], perf0: int) -> list[TheoryRow]:
    from agentx.prefixcache.theory import HitRateMeter

    meter = HitRateMeter(BS)  # what replay's theoretical pass writes for each request sent
    return [
        meter.row(f"{shard}.0.{k}", perf0 + k * S, block_hashes(toks, BS), len(toks))
        for k, toks in enumerate(prompts)
    ]


def with_theory(records: list[RequestRecord], rows: list[TheoryRow]) -> list[RequestRecord]:
    import dataclasses

    by = {t.request_id: t for t in rows}
    return [
        dataclasses.replace(
            r,
            expected_prompt_tokens=by[r.request_id].prompt_tokens,
            theoretical_hit_tokens=by[r.request_id].hit_tokens,
        )
        for r in records
    ]


def test_theoretical_hit_rate_is_recomputed_over_one_cache(tmp_path: Path) -> None:
    system = list(range(1000, 1160))  # 10 blocks every session shares before its marker
    p0 = [[*system, 1, *range(40)], [*system, 1, *range(80)]]
    p1 = [[*system, 2, *range(40)], [*system, 2, *range(80)]]
    t0, t1 = theory_rows(0, p0, 0), theory_rows(1, p1, 0)
    a = shard_dir(tmp_path / "a", "0/2", with_theory(shard_records(0, 0, [1, 2]), t0), theory=t0)
    b = shard_dir(
        tmp_path / "b",
        "1/2",
        with_theory(shard_records(1, 0, [1, 2]), t1),
        theory=t1,
        wall0=WALL0 + S // 2,
    )
    s = merge_results([a, b], tmp_path / "m").summary.to_json()
    prompt = sum(map(len, p0 + p1))
    own = sum(r.hit_tokens for r in t0 + t1)
    assert s["cache"]["theoretical_hit_rate"] == pytest.approx((own + len(system)) / prompt)
    _, rows = load_results(tmp_path / "m")
    assert {r.request_id: r.theoretical_hit_tokens for r in rows}["1.0.0"] == len(system)
    assert (tmp_path / "m" / "theory.parquet").is_file()


def test_without_theory_files_the_shards_own_hits_add_up_with_a_warning(tmp_path: Path) -> None:
    t0 = theory_rows(0, [[*range(64)]], 0)
    a = shard_dir(tmp_path / "a", "0/2", with_theory(shard_records(0, 0, [1]), t0))
    b = shard_dir(tmp_path / "b", "1/2", shard_records(1, 0, [1]))
    res = merge_results([a, b])
    assert any("no theory.parquet" in w for w in res.warnings)
    assert res.summary.to_json()["cache"]["theoretical_hit_rate"] == 0.0


def test_server_metrics_of_one_server_count_once(tmp_path: Path) -> None:
    labels = (("engine", "0"),)

    def server(first: float, last: float) -> ServerMetrics:
        return ServerMetrics(
            scrapes=3,
            url="http://sim:8000/metrics",
            counters=(
                CounterSeries("vllm:prefix_cache_queries", labels, first, last, last - first),
                CounterSeries(
                    "vllm:prefix_cache_hits", labels, first / 2, last / 2, (last - first) / 2
                ),
            ),
            time_series=[
                {"t_ns": 0, "kv_cache_usage_perc": 0.5},
                {"t_ns": S, "kv_cache_usage_perc": 0.7},
            ],
        )

    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [1]), server=server(1000, 5000))
    b = shard_dir(tmp_path / "b", "1/2", shard_records(1, 0, [1]), server=server(2000, 6000))
    s = merge_results([a, b]).summary.to_json()
    assert s["server"]["queries"] == 5000  # 6000 - 1000, not 4000 + 4000
    assert s["cache"]["server_metrics_hit_rate"] == 0.5
    assert s["cache"]["kv_cache_usage_perc"]["max"] == 0.7
    assert s["server"]["servers"][0]["shards"] == ["0/2", "1/2"]
    assert s["server"]["window_t_ns"] == [WALL0, WALL0 + S]  # the scrapes, on the wall clock
    assert len(s["server"]["kv_cache_usage_samples"]) == 4  # both shards' samples, pooled


def test_slo_is_re_evaluated_on_the_merged_rows_and_fails_with_exit_3(
    two: tuple[Path, Path, list[RequestRecord]], tmp_path: Path
) -> None:
    a, b, _ = two
    # each shard alone passes ttft_max<=500ms except shard 1 (1000 ms); a stricter p50 check
    r = runner.invoke(
        app,
        ["merge", str(a), str(b), "-o", str(tmp_path / "m"), "--slo", "ttft_p50<=200ms", "--json"],
    )
    assert r.exit_code == 3, r.output
    s = json.loads(r.stdout)
    (check,) = s["slo"]["checks"]
    assert check["value"] == pytest.approx(250.0)  # the median of the 7 merged TTFTs
    r = runner.invoke(app, ["merge", str(a), str(b), "--slo", "ttft_p50<=300ms", "--json"])
    assert r.exit_code == 0, r.output


def test_report_with_several_directories_merges_them(
    two: tuple[Path, Path, list[RequestRecord]], tmp_path: Path
) -> None:
    a, b, _ = two
    r = runner.invoke(app, ["report", str(a), str(b), "-o", str(tmp_path / "m"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["requests"]["total"] == 8
    shown = runner.invoke(app, ["report", str(a), str(b)])
    assert "merged from 2 shards" in shown.stdout
    assert (tmp_path / "m" / "summary.json").is_file()
    shown = runner.invoke(app, ["report", str(tmp_path / "m"), "--json"])
    assert orjson.loads(shown.stdout)["merged_from"] == json.loads(r.stdout)["merged_from"]


def test_merge_errors_are_one_line(two: tuple[Path, Path, list[RequestRecord]]) -> None:
    a, _, _ = two
    r = runner.invoke(app, ["merge", str(a), str(a)])
    assert r.exit_code == 2
    assert "Traceback" not in r.output
    assert "shard 0/2 is in both" in r.output


def test_older_summaries_without_a_clock_align_rows_by_their_wall_start(tmp_path: Path) -> None:
    rows = [
        streamed(
            100,
            [10.0],
            request_id=f"0.0.{k}",
            sent_ns=77 * S + k * S,
            start_wall_ns=WALL0 + k * S,
            completion_tokens=2,
        )
        for k in range(3)
    ]
    a = shard_dir(tmp_path / "a", "0/1", rows, clock=False)
    res = merge_results([a])
    assert any("no clock anchor" in w for w in res.warnings)
    assert min(r.sent_ns for r in res.records) == WALL0


def test_the_shards_cost_and_percentile_options_carry_over(tmp_path: Path) -> None:
    from agentx.metrics.cost import CostOptions, Prices

    options = {
        "cost": asdict(CostOptions(usd_per_gpu_hour=2.0, prices=Prices(3.0, 0.3, 15.0))),
        "percentiles": [95.0],
    }
    a = shard_dir(tmp_path / "a", "0/2", shard_records(0, 0, [100, 200]), config_extra=options)
    b = shard_dir(tmp_path / "b", "1/2", shard_records(1, 0, [300]), config_extra=options)
    s = merge_results([a, b]).summary.to_json()
    assert s["cost"] is not None and s["cost"]["usd_per_hour"] == 2.0
    assert "p95" in s["latency_ms"]["ttft"]


def test_each_warning_is_printed_once(tmp_path: Path) -> None:
    a = shard_dir(tmp_path / "a", "0/3", shard_records(0, 0, [100]))
    c = shard_dir(tmp_path / "c", "2/3", shard_records(2, 0, [100]))
    for command in (["merge"], ["report"]):
        r = runner.invoke(app, [*command, str(a), str(c)])
        assert r.exit_code == 0, r.output
        assert r.output.count("merging 2 of 3 shards: 1/3 missing") == 1, r.output
        r = runner.invoke(app, [*command, str(a), str(c), "--json"])
        assert r.stderr.count("merging 2 of 3 shards") == 1  # stdout is the merged summary
