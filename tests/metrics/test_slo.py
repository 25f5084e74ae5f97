"""--slo parsing (bad specs are usage errors), evaluation against a summary, and goodput."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentx.core.errors import UsageError
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics.slo import OPS, SloCheck, evaluate, goodput, meets, parse_slo
from agentx.metrics.summary import RunInfo, build_summary
from agentx.results.summary import Summary

from .factory import MS, S, failed, rec, streamed

RUN = RunInfo(endpoint="http://x", model="m", started_at="2025-01-01T00:00:00Z", duration_s=1.0)


def slo_of(records: list[RequestRecord], spec: str) -> dict[str, Any]:
    return build_summary(RUN, records, None, parse_slo(spec), block_size=16).to_json()["slo"]


class TestParse:
    def test_units_normalise_to_the_summary_unit(self) -> None:
        c = parse_slo("ttft_p99<=2s, itl_p50<=50ms,e2e_p90 <= 30000us,tpot_mean<40")
        assert [(x.metric, x.op, x.threshold, x.unit) for x in c] == [
            ("ttft_p99", "<=", 2000.0, "ms"),
            ("itl_p50", "<=", 50.0, "ms"),
            ("e2e_p90", "<=", 30.0, "ms"),
            ("tpot_mean", "<", 40.0, "ms"),  # no unit: milliseconds, like vllm bench --goodput
        ]

    def test_every_kind_of_metric(self) -> None:
        c = parse_slo(
            "output_tps_per_user_p50>=20,output_tps>=1000,rps>=2,input_tps>1,"
            "error_rate<=1%,reported_hit_rate>=0.5,server_metrics_hit_rate>=50%,"
            "theoretical_hit_rate>0.1,goodput>=90%,goodput_rps>=1.5,dispatch_lag_p99<=5ms,"
            "TTFT_P95<=1s"
        )
        got = {x.metric: (x.threshold, x.kind) for x in c}
        assert got["output_tps_per_user_p50"] == (20.0, "per_user")
        assert got["output_tps"] == (1000.0, "throughput")
        assert got["rps"] == (2.0, "throughput")
        assert got["error_rate"] == (0.01, "fraction")
        assert got["server_metrics_hit_rate"] == (0.5, "fraction")
        assert got["goodput"] == (0.9, "fraction")
        assert got["goodput_rps"] == (1.5, "goodput_rate")
        assert got["dispatch_lag_p99"] == (5.0, "latency")
        assert got["ttft_p95"] == (1000.0, "latency")

    def test_bare_metric_means_every_request(self) -> None:
        c = parse_slo("ttft<=2s,output_tps_per_user>=20")
        assert [x.metric for x in c] == ["ttft_max", "output_tps_per_user_min"]

    @pytest.mark.parametrize(
        "spec",
        [
            "",
            " , ",
            "ttft",
            "ttft_p99=2s",
            "ttft_p99<=",
            "ttft_p99<=2 hours",
            "ttft_p99<=2h",
            "ttft_p0<=2s",
            "ttft_p101<=2s",
            "ttft_p99<=-1s",
            "ttft_p99<=nan",
            "latency_p99<=2s",
            "output_tps_p50>=3",
            "error_rate<=5",
            "error_rate<=5ms",
            "goodput>=0.9",  # goodput without any per-request SLO
            "output_tps>=10ms",
            "ttft_p99<=2s;itl_p50<=5ms",
        ],
    )
    def test_bad_specs_are_usage_errors(self, spec: str) -> None:
        with pytest.raises(UsageError) as e:
            parse_slo(spec)
        assert e.value.exit_code == 2
        assert "--slo" in str(e.value)

    @given(st.text(max_size=40))
    def test_any_text_parses_or_is_a_usage_error(self, spec: str) -> None:
        try:
            checks = parse_slo(spec)
        except UsageError:
            return
        assert checks


class TestEvaluate:
    def test_pass_fail_per_check(self) -> None:
        rs = [streamed(100, [10, 10]), streamed(300, [10, 10])]
        slo = slo_of(rs, "ttft_p50<=250ms,ttft_max<=250ms,itl_p50<=50ms")
        assert [(c["metric"], c["passed"]) for c in slo["checks"]] == [
            ("ttft_p50", True),
            ("ttft_max", False),
            ("itl_p50", True),
        ]
        assert slo["checks"][0]["value"] == pytest.approx(200.0)
        assert slo["passed"] is False

    def test_all_pass(self) -> None:
        assert slo_of([streamed(100, [10])], "ttft_p99<=1s,e2e_p99<=1s")["passed"] is True

    def test_percentile_outside_the_summary_is_computed(self) -> None:
        rs = [streamed(float(t), [1]) for t in range(1, 101)]
        check = slo_of(rs, "ttft_p95<=1s")["checks"][0]
        assert check["value"] == pytest.approx(95.05)  # rank 0.95*99 = 94.05 -> 95.05

    def test_unknown_figure_fails_the_check(self) -> None:
        # tool-call-only replies have no TTFC; the server exposed no metrics
        rs = [rec(ttft_ns=50 * MS, e2e_ns=60 * MS, completion_tokens=2)]
        slo = slo_of(rs, "ttfc_p50<=1s,server_metrics_hit_rate>=0.1")
        assert [c["value"] for c in slo["checks"]] == [None, None]
        assert slo["passed"] is False

    def test_error_rate_and_throughput(self) -> None:
        rs = [streamed(10, [1], sent_ns=0), failed(), failed(), streamed(10, [1], sent_ns=S)]
        slo = slo_of(rs, "error_rate<=40%,rps>=1")
        assert slo["checks"][0]["value"] == pytest.approx(0.5)
        assert slo["checks"][0]["passed"] is False
        assert slo["checks"][1]["passed"] is True  # 2 ok over ~1.01 s: just under 2 req/s

    def test_no_checks(self) -> None:
        assert evaluate([], Summary(), []).to_json() == {
            "passed": None,
            "checks": [],
            "goodput": None,
        }


class TestGoodput:
    def test_requests_meeting_every_per_request_slo(self) -> None:
        rs = [
            streamed(100, [10] * 9),  # good
            streamed(3000, [10] * 9),  # TTFT too slow
            streamed(100, [100] * 9),  # TPOT too slow
            failed(),  # never good
            streamed(100, [10] * 9, warmup=True),  # not measured
        ]
        slo = slo_of(rs, "ttft_p99<=2s,tpot_p50<=50ms,goodput>=0.5")
        gp = slo["goodput"]
        assert (gp["requests"], gp["good"], gp["fraction"]) == (4, 1, 0.25)
        assert [s["metric"] for s in gp["slos"]] == ["ttft", "tpot"]
        assert slo["checks"][2] == {
            "metric": "goodput",
            "op": ">=",
            "threshold": 0.5,
            "unit": "fraction",
            "value": 0.25,
            "passed": False,
        }

    def test_rate_over_the_measured_span(self) -> None:
        rs = [streamed(100, [], sent_ns=0), streamed(100, [], sent_ns=S - 100 * MS)]
        gp = goodput(parse_slo("ttft<=1s"), rs)
        assert gp is not None and gp.requests_per_s == pytest.approx(2.0)

    def test_a_figure_the_request_lacks_does_not_count_against_it(self) -> None:
        one_token = streamed(100, [], completion_tokens=1)  # no TPOT
        gp = goodput(parse_slo("tpot<=1ms,output_tps_per_user>=1000"), [one_token])
        assert gp is not None and gp.good == 1

    def test_per_user_speed_floor(self) -> None:
        fast = rec(ttft_ns=10 * MS, e2e_ns=110 * MS, completion_tokens=11)  # 110 tok/s
        slow = rec(ttft_ns=10 * MS, e2e_ns=1010 * MS, completion_tokens=11)  # 11 tok/s
        gp = goodput(parse_slo("output_tps_per_user_p50>=20"), [fast, slow])
        assert gp is not None and gp.good == 1

    def test_none_without_per_request_slos(self) -> None:
        assert goodput(parse_slo("rps>=1"), [streamed(10, [1])]) is None
        assert slo_of([streamed(10, [1])], "rps>=0")["goodput"] is None

    # gaps whose integer-sum mean is a float below mean_itl_ms's: one float apart
    @example([7, 242081, 7, 878264, 194936, 126762], "<=", "next_down", 0.0, True)
    @example([7, 242081, 7, 878264, 194936, 126762], ">", "next_down", 0.0, True)
    @given(
        st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=40),
        st.sampled_from(["<=", "<", ">=", ">"]),
        st.sampled_from(["mean", "next_up", "next_down", "far"]),
        st.floats(min_value=0, max_value=1e6, allow_nan=False),
        st.booleans(),
    )
    def test_a_mean_gap_is_judged_as_its_figure_is(
        self, gaps: list[int], op: str, where: str, far: float, ok: bool
    ) -> None:
        """The mean gap taken from the gaps' integer sum decides only away from the threshold:
        at it, and one float either side, the verdict is ``mean_itl_ms``'s."""
        r = rec(ok=ok, ttft_ns=MS, e2e_ns=MS + sum(gaps), itl_ns=tuple(gaps))
        figure = lat.mean_itl_ms(r)
        mean = lat.mean_itl_ms(rec(itl_ns=tuple(gaps)))
        assert mean is not None
        threshold = {
            "mean": mean,
            "next_up": math.nextafter(mean, math.inf),
            "next_down": math.nextafter(mean, -math.inf),
            "far": far,
        }[where]
        check = SloCheck(f"itl_max{op}", op, threshold, "ms", "latency", "itl", "max")
        assert meets(check, r) == (figure is None or OPS[op](figure, threshold))
