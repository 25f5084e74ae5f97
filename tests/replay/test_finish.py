"""The finish of a run (:func:`agentx.replay.finish.finish_rows`): the figures it builds from the
spooled rows are those of the plain computation over the same rows, and a long finish says what
it is doing on stderr, under ``--json`` too, leaving stdout to the summary."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core import percentiles, progress
from agentx.core.record import RequestRecord
from agentx.metrics import slo
from agentx.metrics.cost import cost_options_of
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import build_summary
from agentx.replay import finish
from agentx.replay.finish import Collected, finish_rows
from agentx.results.runstart import RunStart
from agentx.results.summary.identity import ServerIdentity
from agentx.store.results import read_requests
from agentx.store.rowspool import RowSpool

from .factory import T0, chat_session, write
from .fault_server import FaultServer

MS = 1_000_000
# what build_summary computes from the rows (the rest is the run's set-up and verdicts)
FIGURES = (
    "requests",
    "tokens",
    "throughput",
    "latency_ms",
    "per_user_output_tokens_per_s",
    "cache",
    "slo",
    "windows",
    "errors_by_type",
    "errors",
    "rollups",
)

small = st.none() | st.integers(min_value=0, max_value=5_000)
ns = st.none() | st.integers(min_value=0, max_value=3_000 * MS)


@st.composite
def rows(draw: Any, i: int) -> RequestRecord:
    ok = draw(st.booleans() | st.just(True))
    return RequestRecord(
        request_id=f"r{i}",
        source_request_id=f"s{i}",
        lane=draw(st.integers(0, 3)),
        session_id=draw(st.sampled_from(["a", "b", "c"])),
        thread_id=draw(st.sampled_from(["main", "sub"])),
        turn=draw(st.integers(0, 4)),
        warmup=draw(st.booleans()),
        start_wall_ns=T0,
        scheduled_ns=draw(st.integers(0, 2_000 * MS)),
        sent_ns=draw(st.integers(0, 2_000 * MS)),  # ties: rows sent at one instant
        status=200 if ok else draw(st.none() | st.just(500)),
        ok=ok,
        error_type=None if ok else draw(st.sampled_from(["http", "reset", None])),
        ttfb_ns=draw(ns),
        ttft_ns=draw(ns),
        ttfc_ns=draw(ns),
        e2e_ns=draw(ns),
        itl_ns=tuple(draw(st.lists(st.integers(0, 50 * MS) | st.just(0), max_size=12))),
        prompt_tokens=draw(small),
        completion_tokens=draw(small),
        cached_tokens=draw(small),
        expected_prompt_tokens=draw(small),
        expected_completion_tokens=draw(small),
        theoretical_hit_tokens=draw(small),
        in_window=draw(st.booleans() | st.just(True)),
    )


def run_start(**kw: Any) -> RunStart:
    base: dict[str, Any] = {
        "started_at": "2026-12-02T00:00:00Z",
        "anchor_perf_ns": 0,
        "anchor_wall_ns": T0,
        "endpoint": "http://127.0.0.1:1",
        "model": "m",
        "server_kind": "vllm",
        "server_identity": ServerIdentity(),
        "kv_tokens": None,
        "block_size": 16,
        "lanes": 4,
        "concurrency": 4,
        "workers": 2,
        "api": "chat",
        "window_s": None,
        "max_failed_ratio": None,
        "min_coverage": None,
        "slo": "ttft_p99<=1s,itl<=20ms,e2e<=2s",
        "tokenizer": None,
        "trace": "t.parquet",
        "trace_fingerprint": None,
        "percentiles": (95.0, 99.9),
    }
    base.update(kw)
    return RunStart(**base)


def spooled(d: Path, records: list[RequestRecord], workers: list[int]) -> Collected:
    """``records`` spooled by two processes (``workers[i]``: which one finished row ``i``), a
    few rows a batch."""
    spools = [RowSpool(d / f"rows-{w}.arrows", batch_rows=3) for w in range(2)]
    for r, w in zip(records, workers, strict=True):
        spools[w].add(r)
    for s in spools:
        s.close()
    return Collected(
        row_spools=[s.path for s in spools],
        sent_logs=[],
        started_ns=0,
        ended_ns=5_000 * MS,
        cpu_s=None,
        cpu_percent_max=None,
        sessions_started=None,
        sessions_completed=None,
        live_fallbacks=0,
        interrupted=False,
    )


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.tuples(*(rows(i) for i in range(n))),
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
        )
    )
)
def test_the_finish_has_the_figures_of_the_plain_computation_on_the_same_rows(
    drawn: tuple[tuple[RequestRecord, ...], list[int]],
) -> None:
    """The finish (its large samples sorted in place, its mean gaps judged from their integer
    sums) against ``build_summary`` on the rows in send order with every sample partitioned
    and every mean gap summed as ``mean_itl_ms`` sums it."""
    records, workers = list(drawn[0]), drawn[1]
    start = run_start()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        c = spooled(d, records, workers)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(percentiles, "SORT_AT", 1)  # every sample given up is sorted
            got = finish_rows(start, c, d / "out", None).summary.to_json()
        # send order: by sent_ns, ties in the order of the spools, then of each spool
        in_order = sorted(
            [r for w in (0, 1) for r, rw in zip(records, workers, strict=True) if rw == w],
            key=lambda r: r.sent_ns,
        )
        assert read_requests(d / "out" / "requests.parquet") == in_order
    config = {**start.config, "interrupted": False}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(percentiles, "SORT_AT", 1 << 62)  # never sorted: partitioned
        mp.setattr(slo, "NEAR_THRESHOLD", float("inf"))  # every mean gap is mean_itl_ms
        plain = build_summary(
            finish._run_info(start, c, config, saturated=None),
            in_order,
            None,
            parse_slo(start.slo or ""),
            start.block_size,
            extra_percentiles=start.percentiles,
            cost=cost_options_of(start.cost),
            replicas=finish.run_replicas(start.config),
        ).to_json()
    for key in FIGURES:
        assert got.get(key) == plain.get(key), key
    assert got["schedule"]["dispatch_lag_ms"] == plain["schedule"]["dispatch_lag_ms"]


def test_a_finish_says_what_it_is_doing_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(progress.ENV, "lines")
    monkeypatch.setattr(progress, "DEFAULT_PERIOD_S", 0.001)
    records = [
        RequestRecord(f"r{i}", f"s{i}", 0, "a", "main", i, False, T0, i, i, 200, True)
        for i in range(40)
    ]
    finish_rows(
        run_start(slo=None),
        spooled(tmp_path, records, [i % 2 for i in range(40)]),
        tmp_path / "out",
        None,
    )
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines and all(line.startswith("agentx replay: ") for line in lines)
    assert lines[-1].startswith("agentx replay: writing results, 40/40 rows (100%)")


def test_json_keeps_stdout_for_the_summary_while_the_finish_reports_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.ENV, "lines")
    monkeypatch.setattr(progress, "DEFAULT_PERIOD_S", 0.001)
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=3))
    with FaultServer() as server:
        result = CliRunner().invoke(
            app,
            [
                "replay",
                str(trace),
                "--endpoint",
                server.url,
                "--json",
                "-o",
                str(tmp_path / "res"),
                "--time-scale",
                "0",
                "--no-metrics",
                "--no-preflight",
            ],
        )
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["requests"]["total"] == 3
    assert "agentx replay: writing results, 3/3 rows (100%)" in result.stderr
