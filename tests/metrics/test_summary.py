"""summary.json from synthetic records: one class per metric, values derived by hand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agentx import __version__
from agentx.core.percentiles import STATS
from agentx.core.record import ERR_NO_USAGE, ERR_RESET, ERR_TIMEOUT, RequestRecord
from agentx.metrics import latency
from agentx.metrics.prometheus.server_metrics import ServerMetrics
from agentx.metrics.slo import parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.results.summary import SCHEMA
from agentx.results.summary.server import Tiers

from .factory import MS, S, failed, rec, streamed

RUN = RunInfo(
    endpoint="http://127.0.0.1:8000",
    model="m",
    started_at="2025-01-01T00:00:00+00:00",
    duration_s=12.5,
    sessions_started=3,
    sessions_completed=2,
    client_cpu_percent=41.5,
    client_saturated=False,
    config={"concurrency": 2},
)


def summarize(
    records: Sequence[RequestRecord], server: ServerMetrics | None = None, slo: str | None = None
) -> dict[str, Any]:
    checks = parse_slo(slo) if slo else []
    return build_summary(RUN, records, server, checks, block_size=16).to_json()


class TestContractShape:
    def test_keys_and_types(self) -> None:
        s = summarize([streamed(100, [10, 10], prompt_tokens=50, cached_tokens=0)])
        assert s["schema"] == SCHEMA
        for key in (
            "endpoint",
            "model",
            "started_at",
            "duration_s",
            "requests",
            "sessions",
            "tokens",
            "throughput",
            "latency_ms",
            "per_user_output_tokens_per_s",
            "cache",
            "schedule",
            "client",
            "slo",
        ):
            assert key in s
        assert set(s["latency_ms"]) == {"ttft", "ttfc", "itl", "tpot", "e2e"}
        assert s["agentx_version"] == __version__  # added to the contract: who measured
        for p in (*s["latency_ms"].values(), s["per_user_output_tokens_per_s"]):
            assert set(p) == set(STATS)
        assert s["sessions"] == {"started": 3, "completed": 2}
        assert s["client"] == {"cpu_percent": 41.5, "saturated": False}
        assert s["slo"]["passed"] is None and s["slo"]["checks"] == []
        assert s["config"] == {"concurrency": 2}

    def test_is_json_serialisable(self) -> None:
        import orjson

        s = summarize([streamed(100, [10, 10]), failed()])
        assert orjson.loads(orjson.dumps(s)) == s


class TestTTFT:
    def test_from_successful_requests_only(self) -> None:
        s = summarize([streamed(100, [5]), streamed(300, [5]), failed(ttft_ns=900 * MS)])
        assert s["latency_ms"]["ttft"]["p50"] == pytest.approx(200.0)
        assert s["latency_ms"]["ttft"]["max"] == pytest.approx(300.0)

    def test_warmup_is_excluded(self) -> None:
        s = summarize([streamed(100, [5]), streamed(5000, [5], warmup=True)])
        assert s["latency_ms"]["ttft"]["max"] == pytest.approx(100.0)
        assert s["requests"]["total"] == 1 and s["requests"]["warmup"] == 1


class TestTTFC:
    def test_unknown_when_no_content_token(self) -> None:
        tool_only = rec(ttft_ns=50 * MS, e2e_ns=80 * MS, itl_ns=(30 * MS,), completion_tokens=2)
        s = summarize([tool_only])
        assert s["latency_ms"]["ttft"]["p50"] == pytest.approx(50.0)
        assert s["latency_ms"]["ttfc"] == dict.fromkeys(STATS, None)


class TestITL:
    def test_pooled_over_all_chunks_of_all_requests(self) -> None:
        s = summarize([streamed(10, [10, 20]), streamed(10, [30, 40, 50])])
        itl = s["latency_ms"]["itl"]
        assert itl["mean"] == pytest.approx(30.0)  # (10+20+30+40+50)/5, not the mean of means
        assert itl["max"] == pytest.approx(50.0)
        assert itl["p50"] == pytest.approx(30.0)


class TestTPOT:
    def test_decode_time_over_tokens_after_the_first(self) -> None:
        # e2e - ttft = 90 ms for 10 tokens -> 10 ms per output token
        r = rec(ttft_ns=100 * MS, e2e_ns=190 * MS, completion_tokens=10, itl_ns=(45 * MS, 45 * MS))
        assert summarize([r])["latency_ms"]["tpot"]["p50"] == pytest.approx(10.0)

    def test_uses_usage_tokens_not_chunks(self) -> None:
        # 3 chunks carrying 31 tokens (speculative decoding, batched chunks)
        r = streamed(100, [150, 150], completion_tokens=31)
        assert summarize([r])["latency_ms"]["tpot"]["p50"] == pytest.approx(300 / 30)

    def test_one_token_and_unreported_have_no_tpot(self) -> None:
        s = summarize(
            [
                streamed(100, [], completion_tokens=1),
                streamed(100, [5], completion_tokens=None, prompt_tokens=None),
            ]
        )
        assert s["latency_ms"]["tpot"]["p50"] is None


class TestE2E:
    def test_distribution(self) -> None:
        s = summarize([streamed(100, [100]), streamed(100, [300])])
        assert s["latency_ms"]["e2e"]["p50"] == pytest.approx(300.0)
        assert s["latency_ms"]["e2e"]["max"] == pytest.approx(400.0)


class TestPerUserTokensPerSecond:
    def test_completion_tokens_over_decode_time(self) -> None:
        # 11 tokens, e2e - ttft = 500 ms -> 22 tokens/s
        r = rec(ttft_ns=200 * MS, e2e_ns=700 * MS, completion_tokens=11)
        assert summarize([r])["per_user_output_tokens_per_s"]["p50"] == pytest.approx(22.0)

    def test_single_token_reply_is_left_out(self) -> None:
        r = rec(ttft_ns=200 * MS, e2e_ns=200 * MS, completion_tokens=1)
        assert summarize([r])["per_user_output_tokens_per_s"]["max"] is None

    def test_tokens_that_all_arrived_at_one_instant_have_no_decode_time(self) -> None:
        # a server that answers at once: 95 tokens in chunks that share one read's instant, then
        # the usage chunk 2.8 us later: 34 million tok/s per user is not a measurement
        instant = rec(
            ttft_ns=70 * MS, e2e_ns=70 * MS + 2_800, completion_tokens=95, itl_ns=(0,) * 94
        )
        assert not latency.decode_measured(instant)
        s = summarize([instant])
        assert s["per_user_output_tokens_per_s"]["max"] is None
        assert s["latency_ms"]["tpot"]["max"] is None
        assert s["latency_ms"]["itl"]["max"] == 0.0  # the gaps themselves were measured: 0
        streamed_too = streamed(100, [0, 20], completion_tokens=3)  # one gap of 0 is fine
        assert latency.decode_measured(streamed_too)
        s = summarize([instant, streamed_too])
        assert s["per_user_output_tokens_per_s"]["max"] == pytest.approx(150.0)


class TestDispatchLag:
    def test_sent_minus_scheduled(self) -> None:
        rs = [
            streamed(10, [1], scheduled_ns=0, sent_ns=2 * MS),
            streamed(10, [1], scheduled_ns=S, sent_ns=S + 4 * MS),
        ]
        lag = summarize(rs)["schedule"]["dispatch_lag_ms"]
        assert lag["mean"] == pytest.approx(3.0) and lag["max"] == pytest.approx(4.0)


class TestRequestsAndErrors:
    def test_counts_and_types(self) -> None:
        rs = [
            streamed(10, [1]),
            failed(ERR_TIMEOUT),
            failed(ERR_TIMEOUT),
            failed(ERR_RESET, status=200),
            rec(ok=True, error_type=ERR_NO_USAGE, ttft_ns=MS, e2e_ns=2 * MS, itl_ns=(MS,)),
        ]
        s = summarize(rs)
        assert s["requests"]["total"] == 5
        assert s["requests"]["ok"] == 2
        assert s["requests"]["errors"] == 3
        assert s["requests"]["without_usage"] == 1
        assert s["errors_by_type"] == {"reset": 1, "timeout": 2}


class TestThroughput:
    def test_over_the_measured_span(self) -> None:
        # two requests: first sent at 0 ends at 1 s, second sent at 1 s ends at 2 s -> span 2 s
        rs = [
            rec(sent_ns=0, ttft_ns=100 * MS, e2e_ns=S, completion_tokens=10, prompt_tokens=100),
            rec(sent_ns=S, ttft_ns=100 * MS, e2e_ns=S, completion_tokens=30, prompt_tokens=300),
            rec(sent_ns=-5 * S, warmup=True, e2e_ns=S, completion_tokens=999, prompt_tokens=999),
        ]
        t = summarize(rs)["throughput"]
        assert t["requests_per_s"] == pytest.approx(1.0)
        assert t["output_tokens_per_s"] == pytest.approx(20.0)
        assert t["input_tokens_per_s"] == pytest.approx(200.0)

    def test_no_requests_is_zero_rate_not_crash(self) -> None:
        s = summarize([])
        assert s["throughput"]["requests_per_s"] == 0.0
        assert s["latency_ms"]["ttft"]["p50"] is None


class TestTokens:
    def test_server_usage_with_fallbacks(self) -> None:
        rs = [
            streamed(10, [1, 1], prompt_tokens=100, completion_tokens=7, cached_tokens=64),
            # no usage: agentx's own prompt count and the number of token-carrying chunks
            streamed(
                10, [1, 1, 1], prompt_tokens=None, completion_tokens=None, expected_prompt_tokens=40
            ),
            failed(prompt_tokens=None, expected_prompt_tokens=1000),
        ]
        tokens = summarize(rs)["tokens"]
        assert tokens == {"input": 140, "output": 11, "cached": 64}

    def test_cached_is_null_when_never_reported(self) -> None:
        assert summarize([streamed(10, [1], prompt_tokens=10)])["tokens"]["cached"] is None


class TestReportedHitRate:
    def test_sum_cached_over_sum_prompt_where_reported(self) -> None:
        rs = [
            streamed(10, [1], prompt_tokens=100, cached_tokens=0),
            streamed(10, [1], prompt_tokens=300, cached_tokens=256),
            streamed(10, [1], prompt_tokens=5000, cached_tokens=None),  # not reported: left out
        ]
        assert summarize(rs)["cache"]["reported_hit_rate"] == pytest.approx(256 / 400)

    def test_zero_hits_reported_is_zero(self) -> None:
        rs = [streamed(10, [1], prompt_tokens=100, cached_tokens=0)]
        assert summarize(rs)["cache"]["reported_hit_rate"] == 0.0

    def test_null_when_no_request_reported_it(self) -> None:
        rs = [streamed(10, [1], prompt_tokens=100)]
        assert summarize(rs)["cache"]["reported_hit_rate"] is None


class TestTheoreticalHitRate:
    def test_over_sent_non_warmup_requests(self) -> None:
        rs = [
            rec(warmup=True, theoretical_hit_tokens=0, expected_prompt_tokens=1000),
            rec(theoretical_hit_tokens=96, expected_prompt_tokens=128),
            failed(theoretical_hit_tokens=0, expected_prompt_tokens=64),  # sent, so it counts
        ]
        assert summarize(rs)["cache"]["theoretical_hit_rate"] == pytest.approx(96 / 192)


class TestServerMetricsHitRate:
    def test_from_server_metrics_or_null(self) -> None:
        server = ServerMetrics(hit_rate=0.75, tiers=Tiers(prompt_tokens=10), source="vllm")
        s = summarize([streamed(10, [1])], server)
        assert s["cache"]["server_metrics_hit_rate"] == 0.75
        assert s["cache"]["tiers"] == {"prompt_tokens": 10}
        s = summarize([streamed(10, [1])], None)
        assert s["cache"]["server_metrics_hit_rate"] is None and s["cache"]["tiers"] is None
        assert s["server"] is None


class TestWindows:
    def test_drained_requests_are_reported_apart(self) -> None:
        rs = [
            streamed(100, [1]),
            streamed(900, [1], sent_ns=S, in_window=False),
            failed(in_window=False),
        ]
        s = summarize(rs)
        assert s["requests"]["total"] == 1 and s["requests"]["drained"] == 2
        assert s["latency_ms"]["ttft"]["max"] == pytest.approx(100.0)
        drained = s["windows"]["drained"]
        assert drained["requests"] == 2 and drained["errors"] == 1
        assert drained["latency_ms"]["ttft"]["max"] == pytest.approx(900.0)


class TestSloInSummary:
    def test_failed_check(self) -> None:
        s = summarize([streamed(3000, [1])], slo="ttft_p99<=2s")
        assert s["slo"]["passed"] is False
        assert s["slo"]["checks"][0]["value"] == pytest.approx(3000.0)


class TestRollups:
    def test_per_turn_depth(self) -> None:
        rs = [
            streamed(
                100,
                [1],
                turn=0,
                prompt_tokens=100,
                cached_tokens=0,
                theoretical_hit_tokens=0,
                expected_prompt_tokens=100,
            ),
            streamed(300, [1], turn=0, lane=1, prompt_tokens=100, cached_tokens=0),
            streamed(
                50,
                [1],
                turn=1,
                prompt_tokens=200,
                cached_tokens=96,
                theoretical_hit_tokens=96,
                expected_prompt_tokens=200,
            ),
        ]
        rows = summarize(rs)["rollups"]["per_turn_depth"]
        assert [r["turn"] for r in rows] == [0, 1]
        assert rows[0]["requests"] == 2 and rows[0]["ttft_ms"]["p50"] == pytest.approx(200.0)
        assert rows[0]["reported_hit_rate"] == 0.0
        assert rows[1]["reported_hit_rate"] == pytest.approx(96 / 200)
        assert rows[1]["theoretical_hit_rate"] == pytest.approx(96 / 200)

    def test_per_session_keeps_recycled_copies_apart(self) -> None:
        rs = [
            streamed(10, [1], session_id="a", lane=0, turn=0),
            streamed(10, [1], session_id="a", lane=0, turn=1, sent_ns=S),
            streamed(10, [1], session_id="a", lane=1, turn=0, sent_ns=2 * S),
            failed(session_id="b", lane=1, sent_ns=3 * S),
        ]
        rows = summarize(rs)["rollups"]["per_session"]
        assert [(r["session_id"], r["lane"], r["requests"]) for r in rows] == [
            ("a", 0, 2),
            ("a", 1, 1),
            ("b", 1, 1),
        ]
        assert rows[0]["max_turn"] == 1 and rows[2]["errors"] == 1

    def test_time_series_bins_and_spreads_tokens(self) -> None:
        # decode from 0.5 s to 2.5 s, 100 tokens: 25 in bin 0, 50 in bin 1, 25 in bin 2
        rs = [
            rec(
                sent_ns=0,
                ttft_ns=S // 2,
                e2e_ns=5 * S // 2,
                completion_tokens=100,
                prompt_tokens=10,
                cached_tokens=5,
            ),
            failed(sent_ns=S + S // 10),
        ]
        server = ServerMetrics(
            hit_rate=0.5,
            time_series=[
                {"t_ns": -S, "queries": None, "hits": None, "kv_cache_usage_perc": 0.0},
                {"t_ns": S + 1, "queries": 100, "hits": 25, "kv_cache_usage_perc": 0.3},
            ],
        )
        ts = summarize(rs, server)["rollups"]["time_series"]
        assert [b["t_s"] for b in ts] == [0, 1, 2]
        assert [b["started"] for b in ts] == [1, 1, 0]
        assert [b["errors"] for b in ts] == [0, 1, 0]
        assert [b["completed"] for b in ts] == [0, 0, 1]
        assert [b["output_tokens"] for b in ts] == pytest.approx([25.0, 50.0, 25.0])
        assert ts[2]["reported_hit_rate"] == 0.5 and ts[0]["reported_hit_rate"] is None
        assert ts[1]["server_hit_rate"] == 0.25 and ts[0]["server_hit_rate"] is None
        assert ts[1]["kv_cache_usage_perc"] == 0.3
