"""``summary.cost``: cost per million tokens, revenue and margin of a run (formulas:
``docs/metrics.md``, computed by :mod:`agentx.metrics.cost`). Keys carry their unit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, integer, need, num, opt_obj, text, texts


@dataclass(frozen=True, slots=True)
class TokenMix:
    """The measured token rates (tokens/s) and where the cached share came from."""

    input_tokens_per_s: float
    output_tokens_per_s: float
    cached_fraction: float | None  # of input tokens; None: unknown
    cached_fraction_source: str | None  # "reported" (usage) or "server_metrics"

    @property
    def cached_input_tokens_per_s(self) -> float | None:
        return (
            None if self.cached_fraction is None else self.input_tokens_per_s * self.cached_fraction
        )

    def to_json(self) -> Json:
        return {
            "input_tokens_per_s": self.input_tokens_per_s,
            "cached_input_tokens_per_s": self.cached_input_tokens_per_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "cached_fraction": self.cached_fraction,
            "cached_fraction_source": self.cached_fraction_source,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenMix:
        return cls(
            need(num(d, "input_tokens_per_s"), "input_tokens_per_s"),
            need(num(d, "output_tokens_per_s"), "output_tokens_per_s"),
            num(d, "cached_fraction"),
            text(d, "cached_fraction_source"),
        )


@dataclass(frozen=True, slots=True)
class PricesPaid:
    """The market prices the revenue was computed at, USD per million tokens."""

    input: float
    cached: float
    output: float
    preset: str | None  # the preset's name, when one was used

    def to_json(self) -> Json:
        return {
            "input": self.input,
            "cached": self.cached,
            "output": self.output,
            "preset": self.preset,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PricesPaid:
        return cls(
            need(num(d, "input"), "input"),
            need(num(d, "cached"), "cached"),
            need(num(d, "output"), "output"),
            text(d, "preset"),
        )


@dataclass(frozen=True, slots=True)
class HourPartsPaid:
    """An accelerator-hour given by its parts (per accelerator), and its power share."""

    capex_usd_per_hour: float
    power_kw: float
    usd_per_kwh: float
    pue: float
    power_usd_per_hour: float
    hosting_usd_per_hour: float

    def to_json(self) -> Json:
        return {
            "capex_usd_per_hour": self.capex_usd_per_hour,
            "power_kw": self.power_kw,
            "usd_per_kwh": self.usd_per_kwh,
            "pue": self.pue,
            "power_usd_per_hour": self.power_usd_per_hour,
            "hosting_usd_per_hour": self.hosting_usd_per_hour,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HourPartsPaid:
        def f(key: str) -> float:
            return need(num(d, key), key)

        return cls(
            f("capex_usd_per_hour"),
            f("power_kw"),
            f("usd_per_kwh"),
            f("pue"),
            f("power_usd_per_hour"),
            f("hosting_usd_per_hour"),
        )


@dataclass(frozen=True, slots=True)
class Cost:
    """Every figure is ``None`` when its inputs are unknown (no price, no cost, no tokens)."""

    usd_per_gpu_hour: float | None = None
    gpus: int | None = None
    utilization: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_input_tokens: float | None = None
    usd_per_million_output_tokens: float | None = None
    usd_per_million_total_tokens: float | None = None
    token_mix: TokenMix | None = None
    price_usd_per_million_tokens: PricesPaid | None = None
    license_fraction: float | None = None
    revenue_usd_per_hour: float | None = None
    revenue_usd_per_gpu_hour: float | None = None
    license_usd_per_hour: float | None = None
    gross_profit_usd_per_hour: float | None = None
    gross_margin: float | None = None
    breakeven_utilization: float | None = None
    notes: tuple[str, ...] = ()
    gpu_hour_parts: HourPartsPaid | None = None  # when the hour was given by its parts

    def to_json(self) -> Json:
        price = self.price_usd_per_million_tokens
        out: Json = {
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "gpus": self.gpus,
            "utilization": self.utilization,
            "usd_per_hour": self.usd_per_hour,
            "usd_per_million_input_tokens": self.usd_per_million_input_tokens,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "usd_per_million_total_tokens": self.usd_per_million_total_tokens,
            "token_mix": None if self.token_mix is None else self.token_mix.to_json(),
            "price_usd_per_million_tokens": None if price is None else price.to_json(),
            "license_fraction": self.license_fraction,
            "revenue_usd_per_hour": self.revenue_usd_per_hour,
            "revenue_usd_per_gpu_hour": self.revenue_usd_per_gpu_hour,
            "license_usd_per_hour": self.license_usd_per_hour,
            "gross_profit_usd_per_hour": self.gross_profit_usd_per_hour,
            "gross_margin": self.gross_margin,
            "breakeven_utilization": self.breakeven_utilization,
            "notes": list(self.notes),
        }
        if self.gpu_hour_parts is not None:
            out["gpu_hour_parts"] = self.gpu_hour_parts.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Cost:
        mix, price, parts = (
            opt_obj(d, "token_mix"),
            opt_obj(d, "price_usd_per_million_tokens"),
            opt_obj(d, "gpu_hour_parts"),
        )
        return cls(
            usd_per_gpu_hour=num(d, "usd_per_gpu_hour"),
            gpus=integer(d, "gpus"),
            utilization=num(d, "utilization"),
            usd_per_hour=num(d, "usd_per_hour"),
            usd_per_million_input_tokens=num(d, "usd_per_million_input_tokens"),
            usd_per_million_output_tokens=num(d, "usd_per_million_output_tokens"),
            usd_per_million_total_tokens=num(d, "usd_per_million_total_tokens"),
            token_mix=None if mix is None else TokenMix.from_json(mix),
            price_usd_per_million_tokens=None if price is None else PricesPaid.from_json(price),
            license_fraction=num(d, "license_fraction"),
            revenue_usd_per_hour=num(d, "revenue_usd_per_hour"),
            revenue_usd_per_gpu_hour=num(d, "revenue_usd_per_gpu_hour"),
            license_usd_per_hour=num(d, "license_usd_per_hour"),
            gross_profit_usd_per_hour=num(d, "gross_profit_usd_per_hour"),
            gross_margin=num(d, "gross_margin"),
            breakeven_utilization=num(d, "breakeven_utilization"),
            notes=texts(d, "notes"),
            gpu_hour_parts=None if parts is None else HourPartsPaid.from_json(parts),
        )
