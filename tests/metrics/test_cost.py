"""Cost per million tokens, revenue, margin and break-even utilisation (agentx/metrics/cost.py).

The worked example of docs/metrics.md: 8 accelerators at $2.00/h serving 19,000 input tokens/s (90 %
cached) and 1,000 output tokens/s, sold at $3 / $0.30 / $15 per million, 30 % licence fee.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.core.errors import UsageError
from agentx.metrics.cost import (
    CostInputs,
    CostOptions,
    HourParts,
    Prices,
    cost_summary,
    load_price_presets,
    parse_price,
    preset_prices,
    price_sanity_note,
)
from agentx.results.summary import Cache, Summary, Throughput, TokenTotals


def run(
    input_tps: float = 19_000.0,
    output_tps: float = 1_000.0,
    cached: int | None = 1_710_000,
    server_rate: float | None = None,
) -> Summary:
    """The parts of summary.json the cost block reads: 100 s at the rates given."""
    return Summary(
        throughput=Throughput(input_tokens_per_s=input_tps, output_tokens_per_s=output_tps),
        tokens=TokenTotals(input=int(input_tps * 100), output=int(output_tps * 100), cached=cached),
        cache=Cache(server_metrics_hit_rate=server_rate),
    )


def block(options: CostOptions, summary: Summary) -> dict[str, Any]:
    """The ``cost`` object of ``summary.json`` for ``options``."""
    return cost_summary(options, summary).to_json()


SONNET = Prices(3.0, 0.30, 15.0)
EXAMPLE = CostOptions(usd_per_gpu_hour=2.0, gpus=8, prices=SONNET, license_fraction=0.3)


class TestHandComputed:
    def test_cost_per_million_tokens(self) -> None:
        c = block(CostOptions(usd_per_gpu_hour=2.0, gpus=8), run())
        assert c["usd_per_hour"] == 16.0
        # 16 $/h over 1,000 tok/s x 3600 s = 3.6 M output tokens an hour
        assert c["usd_per_million_output_tokens"] == pytest.approx(16 / 3.6)
        assert c["usd_per_million_input_tokens"] == pytest.approx(16 / 68.4)
        assert c["usd_per_million_total_tokens"] == pytest.approx(16 / 72.0)
        assert c["revenue_usd_per_hour"] is None and c["gross_margin"] is None

    def test_revenue_margin_breakeven(self) -> None:
        c = block(EXAMPLE, run())
        # per second: 1,900 uncached x $3 + 17,100 cached x $0.30 + 1,000 output x $15, per million
        assert c["token_mix"]["cached_input_tokens_per_s"] == pytest.approx(17_100)
        assert c["revenue_usd_per_hour"] == pytest.approx(92.988)
        assert c["revenue_usd_per_gpu_hour"] == pytest.approx(11.6235)
        assert c["license_usd_per_hour"] == pytest.approx(27.8964)
        assert c["gross_profit_usd_per_hour"] == pytest.approx(49.0916)
        assert c["gross_margin"] == pytest.approx(49.0916 / 92.988)
        assert c["breakeven_utilization"] == pytest.approx(16 / 65.0916)
        assert c["price_usd_per_million_tokens"] == {
            "input": 3.0,
            "cached": 0.3,
            "output": 15.0,
            "preset": None,
        }

    def test_half_utilisation(self) -> None:
        c = block(
            CostOptions(
                usd_per_gpu_hour=2.0, gpus=8, utilization=0.5, prices=SONNET, license_fraction=0.3
            ),
            run(),
        )
        assert c["usd_per_million_output_tokens"] == pytest.approx(16 / 1.8)
        assert c["revenue_usd_per_hour"] == pytest.approx(46.494)
        assert c["gross_margin"] == pytest.approx(16.5458 / 46.494)  # 46.494 x 0.7 - 16
        assert c["breakeven_utilization"] == pytest.approx(16 / 65.0916)  # not U-dependent

    def test_hour_from_parts(self) -> None:
        opts = CostInputs(
            capex_per_hour=1.20, power_kw=1.2, usd_per_kwh=0.10, pue=1.25, hosting_per_hour=0.30
        ).options()
        assert opts is not None and opts.parts is not None
        # 1.20 + 1.2 kW x $0.10 x 1.25 + 0.30 = 1.65
        assert opts.usd_per_gpu_hour == pytest.approx(1.65)
        c = block(opts, run())
        assert c["gpu_hour_parts"]["power_usd_per_hour"] == pytest.approx(0.15)

    def test_cached_share_from_server_metrics_when_usage_has_none(self) -> None:
        c = block(EXAMPLE, run(cached=None, server_rate=0.9))
        assert c["token_mix"]["cached_fraction_source"] == "server_metrics"
        assert c["revenue_usd_per_hour"] == pytest.approx(92.988)

    def test_no_cached_tokens_priced_as_uncached_with_a_note(self) -> None:
        c = block(EXAMPLE, run(cached=None))
        assert c["token_mix"]["cached_input_tokens_per_s"] is None
        # 19,000 x $3 + 1,000 x $15 per million per second
        assert c["revenue_usd_per_hour"] == pytest.approx(0.072 * 3600)
        assert c["notes"] and "uncached" in c["notes"][0]

    def test_no_output_is_unknown_not_zero(self) -> None:
        c = block(EXAMPLE, run(input_tps=0.0, output_tps=0.0, cached=None))
        assert c["usd_per_million_output_tokens"] is None
        assert c["revenue_usd_per_hour"] == 0.0
        assert c["gross_margin"] is None and c["breakeven_utilization"] is None

    def test_a_price_far_below_the_cost_gets_a_sanity_note(self) -> None:
        # a tiny CPU model at GPU prices: 20 tok/s in, 2 tok/s out on 8 x $2.10
        c = block(
            CostOptions(usd_per_gpu_hour=2.1, gpus=8, utilization=0.6, prices=SONNET),
            run(input_tps=20.0, output_tps=2.0, cached=1000),
        )
        assert c["gross_margin"] < -9
        (note,) = c["notes"]
        assert note.startswith("price far below cost: the revenue after the licence fee covers ")
        assert "check --price / --price-preset and --gpu-hour-cost / --gpus" in note
        assert block(EXAMPLE, run())["notes"] == []  # a plausible deployment: no note

    def test_the_note_is_at_a_tenth_of_the_cost(self) -> None:
        assert price_sanity_note(16.0, 1.7) is None  # margin about -840 %
        assert price_sanity_note(16.0, 1.5) is not None  # about -970 %
        assert price_sanity_note(None, 1.0) is None and price_sanity_note(16.0, 0.0) is None

    def test_unprofitable_even_when_full(self) -> None:
        c = block(
            CostOptions(usd_per_gpu_hour=100.0, gpus=8, prices=SONNET, license_fraction=0.3), run()
        )
        assert c["gross_margin"] < 0 and c["breakeven_utilization"] > 1


class TestParsing:
    def test_price(self) -> None:
        assert parse_price("input=3, cached=0.3 ,output=15") == SONNET
        assert parse_price("input=1,output=2").cached == 1.0  # no cache discount by default

    @pytest.mark.parametrize(
        "text",
        [
            "input=3",
            "input=3,output=x",
            "input=3,output=1,foo=2",
            "input=-1,output=1",
            "input=1,input=2,output=3",
            "3,15",
        ],
    )
    def test_bad_price(self, text: str) -> None:
        with pytest.raises(UsageError, match="--price"):
            parse_price(text)

    def test_bundled_presets_are_complete(self) -> None:
        presets = load_price_presets()
        assert len(presets) >= 3
        for name in presets:
            p = preset_prices(name)
            assert p.name == name and p.output >= p.input >= p.cached > 0

    def test_price_file(self, tmp_path: Path) -> None:
        f = tmp_path / "p.toml"
        f.write_text("[price.mine]\ninput = 1\noutput = 4\n")
        opts = CostInputs(price_preset="mine", price_file=f).options()
        assert opts is not None and opts.prices == Prices(1.0, 1.0, 4.0, "mine")
        with pytest.raises(UsageError, match="known: mine"):
            CostInputs(price_preset="theirs", price_file=f).options()
        f.write_text("[price")
        with pytest.raises(UsageError, match="not valid TOML"):
            CostInputs(price_preset="mine", price_file=f).options()

    def test_nothing_given_is_none(self) -> None:
        assert CostInputs().options() is None
        assert CostInputs(gpus=8, utilization=0.5).options() is None

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"gpu_hour_cost": 2.0, "capex_per_hour": 1.0}, "not both"),
            ({"power_kw": 1.0}, "go together"),
            ({"pue": 1.2, "gpu_hour_cost": 2.0}, "--pue needs"),
            ({"capex_per_hour": 1.0, "power_kw": 1, "usd_per_kwh": 0.1, "pue": 0.5}, "--pue"),
            ({"gpu_hour_cost": 2.0, "utilization": 0.0}, "--utilization"),
            ({"gpu_hour_cost": 2.0, "utilization": 1.5}, "--utilization"),
            ({"gpu_hour_cost": 2.0, "gpus": 0}, "--gpus"),
            ({"gpu_hour_cost": 2.0, "license_fraction": 1.0}, "--license-fraction"),
            ({"gpu_hour_cost": -1.0}, "--gpu-hour-cost"),
            ({"price": "input=1,output=2", "price_preset": "gpt-5"}, "not both"),
            ({"price_file": Path("x.toml")}, "--price-preset"),
        ],
    )
    def test_bad_options(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(UsageError, match=match):
            CostInputs(**kwargs).options()


rates = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(
    hour=st.floats(min_value=0.01, max_value=100.0),
    gpus=st.integers(min_value=1, max_value=64),
    inp=rates,
    out=rates,
    hit=fractions,
    lic=st.floats(min_value=0.0, max_value=0.9),
)
def test_margin_is_zero_at_the_breakeven_utilisation(
    hour: float, gpus: int, inp: float, out: float, hit: float, lic: float
) -> None:
    summary = run(inp, out, cached=None, server_rate=hit)
    opts = CostOptions(usd_per_gpu_hour=hour, gpus=gpus, prices=SONNET, license_fraction=lic)
    u = block(opts, summary)["breakeven_utilization"]
    assert u is not None and u > 0
    if u <= 1:
        at = CostOptions(
            usd_per_gpu_hour=hour, gpus=gpus, utilization=u, prices=SONNET, license_fraction=lic
        )
        c = block(at, summary)
        assert c["gross_margin"] == pytest.approx(0.0, abs=1e-9)
        assert c["gross_profit_usd_per_hour"] == pytest.approx(0.0, abs=1e-9 * hour * gpus)


@given(
    hour=st.floats(min_value=0.01, max_value=100.0),
    inp=rates,
    out=rates,
    u1=st.floats(min_value=0.01, max_value=1.0),
    u2=st.floats(min_value=0.01, max_value=1.0),
)
def test_cost_per_token_times_tokens_is_the_hour_and_margin_grows_with_use(
    hour: float, inp: float, out: float, u1: float, u2: float
) -> None:
    lo, hi = sorted((u1, u2))
    summary = run(inp, out)
    a = block(CostOptions(usd_per_gpu_hour=hour, utilization=lo, prices=SONNET), summary)
    b = block(CostOptions(usd_per_gpu_hour=hour, utilization=hi, prices=SONNET), summary)
    tokens_per_hour = (inp + out) * 3600 * lo
    assert math.isclose(a["usd_per_million_total_tokens"] * tokens_per_hour / 1e6, hour)
    assert b["gross_margin"] >= a["gross_margin"] - 1e-12


def test_hour_parts_sum() -> None:
    p = HourParts(capex_usd_per_hour=1.0, power_kw=0.7, usd_per_kwh=0.12, pue=1.3)
    assert p.usd_per_hour == pytest.approx(1.0 + 0.7 * 0.12 * 1.3)
