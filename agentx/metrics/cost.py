"""Cost per million tokens, revenue, gross margin and break-even utilisation of a measured run.

InferenceX-style token economics from what a replay measured: the token rates (input, cached
input, output) of ``summary.json`` and what the user says an accelerator-hour costs and a million
tokens sell for. Formulas (``docs/metrics.md``), with ``C = gpus x usd_per_gpu_hour`` the
deployment's cost per hour and ``U`` the utilisation (the share of the hour the measured load runs):

- ``usd_per_million_output_tokens = C / (output_tokens_per_s x 3600 x U) x 1e6``; the input and
  total variants divide by the input and input + output token rates instead.
- ``revenue_usd_per_hour = 3600 x U x (uncached_input_tps x p_input + cached_input_tps x p_cached
  + output_tps x p_output) / 1e6`` (prices in USD per million tokens, cached input tokens priced
  as cached); per accelerator-hour: divided by ``gpus``.
- ``gross_margin = (revenue x (1 - license_fraction) - C) / revenue``: the licence fee is a share
  of revenue paid to the model's licensor.
- ``breakeven_utilization = C / (revenue at U=1 x (1 - license_fraction))``: the utilisation at
  which the gross margin is zero (above 1: the deployment loses money even fully busy).

Everything is ``None`` when its inputs are unknown (no price, no cost, no output tokens).
Price presets are data: ``agentx/data/prices.toml`` (``agentx example-path prices``), or a copy
the user edits and passes as ``--price-file``.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.core.options import Panel
from agentx.core.options import option as declared_option
from agentx.results.summary import Summary
from agentx.results.summary.cost import Cost, HourPartsPaid, PricesPaid, TokenMix

SECONDS_PER_HOUR = 3600.0
PER_MILLION = 1e6
PRICE_KEYS = ("input", "cached", "output")
# revenue after the licence fee below this share of the hour's cost is more likely a unit or a
# typing slip (a price per token, a cost per day) than a deployment: the cost block says so
SANE_REVENUE_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Prices:
    """Market prices in USD per million tokens; ``cached`` is the price of a cached input token."""

    input: float
    cached: float
    output: float
    name: str | None = None  # the preset's name, when one was used

    def __post_init__(self) -> None:
        for key in PRICE_KEYS:
            v = getattr(self, key)
            if not math.isfinite(v) or v < 0:
                raise UsageError(f"--price: {key} must be a finite number >= 0, got {v}")


@dataclass(frozen=True, slots=True)
class HourParts:
    """An accelerator-hour built from its parts (all per accelerator)."""

    capex_usd_per_hour: float = 0.0  # amortised purchase (chip, server, network share)
    power_kw: float = 0.0  # average draw, server share included
    usd_per_kwh: float = 0.0
    pue: float = 1.0  # data-centre power usage effectiveness
    hosting_usd_per_hour: float = 0.0  # space, cooling contracts, operations

    @property
    def power_usd_per_hour(self) -> float:
        return self.power_kw * self.usd_per_kwh * self.pue

    @property
    def usd_per_hour(self) -> float:
        return self.capex_usd_per_hour + self.power_usd_per_hour + self.hosting_usd_per_hour


@dataclass(frozen=True, slots=True)
class CostOptions:
    """What an accelerator-hour costs, how many the measured server used, and the prices."""

    usd_per_gpu_hour: float | None = None
    gpus: int = 1
    utilization: float = 1.0
    prices: Prices | None = None
    license_fraction: float = 0.0
    parts: HourParts | None = None  # when the hour was given by its parts

    def __post_init__(self) -> None:
        if self.usd_per_gpu_hour is not None and not (
            math.isfinite(self.usd_per_gpu_hour) and self.usd_per_gpu_hour >= 0
        ):
            raise UsageError("--gpu-hour-cost must be a finite number >= 0")
        if self.gpus < 1:
            raise UsageError("--gpus must be at least 1")
        if not 0 < self.utilization <= 1:
            raise UsageError("--utilization must be in (0, 1]")
        if not 0 <= self.license_fraction < 1:
            raise UsageError("--license-fraction must be in [0, 1)")


def cost_options_json(cost: CostOptions | None) -> dict[str, Any] | None:
    """The cost options as JSON (a replay's set-up, :mod:`agentx.results.runstart`)."""
    return None if cost is None else dataclasses.asdict(cost)


def cost_options_of(d: Mapping[str, Any] | None) -> CostOptions | None:
    """The cost options :func:`cost_options_json` wrote (``None``: none, or unreadable)."""
    if d is None:
        return None
    try:
        prices, parts = d.get("prices"), d.get("parts")
        return CostOptions(
            **{k: v for k, v in d.items() if k not in ("prices", "parts")},
            prices=None if prices is None else Prices(**prices),
            parts=None if parts is None else HourParts(**parts),
        )
    except (TypeError, UsageError):
        return None


# -- building the options from what was given ----------------------------------------------------


def parse_price(text: str) -> Prices:
    """``"input=3,cached=0.3,output=15"`` (USD per million tokens) -> :class:`Prices`.

    ``cached`` defaults to ``input`` (no cache discount); ``input`` and ``output`` are required.
    """
    values: dict[str, float] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, number = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in PRICE_KEYS:
            raise UsageError(
                f"--price: {item!r}: expected input=X,cached=Y,output=Z (USD per million tokens)"
            )
        if key in values:
            raise UsageError(f"--price: {key} given twice")
        try:
            values[key] = float(number)
        except ValueError:
            raise UsageError(f"--price: {key}={number!r} is not a number") from None
    return _prices(values, "--price")


def _prices(values: Mapping[str, Any], where: str, name: str | None = None) -> Prices:
    missing = [k for k in ("input", "output") if k not in values]
    if missing:
        raise UsageError(f"{where}: {' and '.join(missing)} price missing")
    try:
        inp, out = float(values["input"]), float(values["output"])
        cached = float(values.get("cached", inp))
    except (TypeError, ValueError):
        raise UsageError(f"{where}: prices must be numbers") from None
    return Prices(inp, cached, out, name)


def default_price_file() -> Path:
    return example_path("prices")


def load_price_presets(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The ``[price.NAME]`` tables of a price file (the bundled one by default)."""
    p = path or default_price_file()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--price-file {p}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--price-file {p}: not valid TOML: {exc}") from None
    presets = data.get("price")
    if not isinstance(presets, dict) or not all(isinstance(v, dict) for v in presets.values()):
        raise UsageError(f"--price-file {p}: expected [price.NAME] tables")
    return presets


def preset_prices(name: str, path: Path | None = None) -> Prices:
    presets = load_price_presets(path)
    if name not in presets:
        raise UsageError(
            f"--price-preset: no preset {name!r} (known: {', '.join(sorted(presets))})"
        )
    return _prices(presets[name], f"price preset {name!r}", name)


def _cost[T](default: T, *names: str, **kw: Any) -> T:
    return declared_option(default, *names, panel=Panel.COST, **kw)


@dataclass(frozen=True, slots=True)
class CostInputs:
    """The cost options as given (``agentx replay``, ``sweep`` and ``report`` take them, and a
    ``--config`` file's ``[cost]`` section); :meth:`options` turns them into
    :class:`CostOptions`."""

    gpu_hour_cost: float | None = _cost(
        None, "--gpu-hour-cost", metavar="USD", help="what one accelerator-hour costs (all-in)"
    )
    capex_per_hour: float | None = _cost(
        None,
        "--capex-per-hour",
        metavar="USD",
        help="part of the hour: amortised purchase, per GPU",
    )
    power_kw: float | None = _cost(
        None, "--power-kw", metavar="KW", help="part of the hour: average power draw per GPU, kW"
    )
    usd_per_kwh: float | None = _cost(
        None, "--usd-per-kwh", metavar="USD", help="part of the hour: electricity price"
    )
    pue: float | None = _cost(
        None, "--pue", metavar="F", help="part of the hour: data-centre PUE (>= 1) [default: 1]"
    )
    hosting_per_hour: float | None = _cost(
        None, "--hosting-per-hour", metavar="USD", help="part of the hour: hosting per GPU"
    )
    gpus: int = _cost(1, "--gpus", metavar="N", min=1, help="accelerators the measured server used")
    utilization: float = _cost(
        1.0,
        "--utilization",
        metavar="U",
        min=0.0,
        max=1.0,
        help="share of the hour the measured load runs (0 < U <= 1)",
    )
    price: str | None = _cost(
        None,
        "--price",
        metavar="SPEC",
        help="USD per million tokens: input=X,cached=Y,output=Z (cached defaults to input)",
    )
    price_preset: str | None = _cost(
        None,
        "--price-preset",
        metavar="NAME",
        help="prices by name from --price-file (bundled: agentx example-path prices)",
    )
    price_file: Path | None = _cost(
        None,
        "--price-file",
        metavar="FILE",
        show_default=False,
        help="a TOML of [price.NAME] tables [default: the bundled one]",
    )
    license_fraction: float = _cost(
        0.0,
        "--license-fraction",
        metavar="F",
        min=0.0,
        max=0.999,
        help="share of revenue paid to the model's licensor",
    )

    def options(self) -> CostOptions | None:
        """:class:`CostOptions`; ``None`` when neither a cost nor a price is set."""
        return _cost_options(self)


def _cost_options(c: CostInputs) -> CostOptions | None:
    gpu_hour_cost, capex_per_hour, power_kw = c.gpu_hour_cost, c.capex_per_hour, c.power_kw
    usd_per_kwh, pue, hosting_per_hour = c.usd_per_kwh, c.pue, c.hosting_per_hour
    price, price_preset, price_file = c.price, c.price_preset, c.price_file
    part_values = (capex_per_hour, power_kw, usd_per_kwh, hosting_per_hour)
    parts: HourParts | None = None
    if any(v is not None for v in part_values):
        if gpu_hour_cost is not None:
            raise UsageError("give --gpu-hour-cost or its parts (capex, power, hosting), not both")
        if (power_kw is None) != (usd_per_kwh is None):
            raise UsageError("--power-kw and --usd-per-kwh go together")
        for flag, v in (
            ("--capex-per-hour", capex_per_hour),
            ("--power-kw", power_kw),
            ("--usd-per-kwh", usd_per_kwh),
            ("--hosting-per-hour", hosting_per_hour),
        ):
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise UsageError(f"{flag} must be a finite number >= 0")
        parts = HourParts(
            capex_usd_per_hour=capex_per_hour or 0.0,
            power_kw=power_kw or 0.0,
            usd_per_kwh=usd_per_kwh or 0.0,
            pue=1.0 if pue is None else pue,
            hosting_usd_per_hour=hosting_per_hour or 0.0,
        )
        if not (math.isfinite(parts.pue) and parts.pue >= 1.0):
            raise UsageError("--pue must be >= 1")
        gpu_hour_cost = parts.usd_per_hour
    elif pue is not None:
        raise UsageError("--pue needs --power-kw and --usd-per-kwh")
    if price is not None and price_preset is not None:
        raise UsageError("give --price or --price-preset, not both")
    if price_file is not None and price_preset is None:
        raise UsageError("--price-file needs --price-preset NAME")
    prices = (
        parse_price(price)
        if price is not None
        else preset_prices(price_preset, price_file)
        if price_preset is not None
        else None
    )
    if gpu_hour_cost is None and prices is None:
        return None
    return CostOptions(
        usd_per_gpu_hour=gpu_hour_cost,
        gpus=c.gpus,
        utilization=c.utilization,
        prices=prices,
        license_fraction=c.license_fraction,
        parts=parts,
    )


# -- the figures -----------------------------------------------------------------------------


def token_mix(summary: Summary) -> TokenMix:
    """The rates of ``summary.json``; the cached share from usage, else from the server's /metrics."""
    tp, tok, cache = summary.throughput, summary.tokens, summary.cache
    fraction: float | None = None
    source: str | None = None
    if tok.cached is not None and tok.input is not None and tok.input > 0:
        fraction, source = min(float(tok.cached) / tok.input, 1.0), "reported"
    elif cache.server_metrics_hit_rate is not None:
        fraction, source = float(cache.server_metrics_hit_rate), "server_metrics"
    return TokenMix(
        float(tp.input_tokens_per_s or 0.0),
        float(tp.output_tokens_per_s or 0.0),
        fraction,
        source,
    )


def _per_million(usd_per_hour: float | None, tokens_per_s: float, u: float) -> float | None:
    if usd_per_hour is None or tokens_per_s <= 0:
        return None
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR * u) * PER_MILLION


def revenue_usd_per_hour(mix: TokenMix, prices: Prices, utilization: float = 1.0) -> float:
    """What the measured token mix earns in an hour at ``utilization``, cached tokens as cached."""
    cached = mix.cached_input_tokens_per_s or 0.0
    uncached = mix.input_tokens_per_s - cached
    usd_per_s = (
        uncached * prices.input + cached * prices.cached + mix.output_tokens_per_s * prices.output
    ) / PER_MILLION
    return usd_per_s * SECONDS_PER_HOUR * utilization


def breakeven_utilization(
    usd_per_hour: float, revenue_at_full_usd_per_hour: float, license_fraction: float
) -> float | None:
    """The utilisation at which revenue after the licence fee pays for the hour."""
    net = revenue_at_full_usd_per_hour * (1.0 - license_fraction)
    return usd_per_hour / net if net > 0 else None


def price_sanity_note(usd_per_hour: float | None, net_revenue_usd_per_hour: float) -> str | None:
    """A note when the revenue after the licence fee covers less than
    :data:`SANE_REVENUE_SHARE` of the hour's cost (a margin below -900 %); none without a cost
    or without revenue (no tokens measured: no margin either)."""
    if not usd_per_hour or net_revenue_usd_per_hour <= 0:
        return None
    if net_revenue_usd_per_hour >= SANE_REVENUE_SHARE * usd_per_hour:
        return None
    share = net_revenue_usd_per_hour / usd_per_hour
    return (
        f"price far below cost: the revenue after the licence fee covers {100 * share:.2g}% of "
        "the hour's cost at the measured token rates; check --price / --price-preset and "
        "--gpu-hour-cost / --gpus (and that this server's throughput is the deployment's)"
    )


def cost_summary(options: CostOptions, summary: Summary) -> Cost:
    """The ``cost`` block of a run's summary (keys carry their unit)."""
    mix = token_mix(summary)
    u, gpus = options.utilization, options.gpus
    hour = None if options.usd_per_gpu_hour is None else options.usd_per_gpu_hour * gpus
    total_tps = mix.input_tokens_per_s + mix.output_tokens_per_s
    parts = options.parts
    cost = Cost(
        usd_per_gpu_hour=options.usd_per_gpu_hour,
        gpus=gpus,
        utilization=u,
        usd_per_hour=hour,
        usd_per_million_input_tokens=_per_million(hour, mix.input_tokens_per_s, u),
        usd_per_million_output_tokens=_per_million(hour, mix.output_tokens_per_s, u),
        usd_per_million_total_tokens=_per_million(hour, total_tps, u),
        token_mix=mix,
        license_fraction=options.license_fraction,
        gpu_hour_parts=(
            None
            if parts is None
            else HourPartsPaid(
                capex_usd_per_hour=parts.capex_usd_per_hour,
                power_kw=parts.power_kw,
                usd_per_kwh=parts.usd_per_kwh,
                pue=parts.pue,
                power_usd_per_hour=parts.power_usd_per_hour,
                hosting_usd_per_hour=parts.hosting_usd_per_hour,
            )
        ),
    )
    prices = options.prices
    if prices is None:
        return cost
    revenue = revenue_usd_per_hour(mix, prices, u)
    lic = options.license_fraction
    profit = None if hour is None else revenue * (1.0 - lic) - hour
    notes = []
    if mix.cached_fraction is None:
        notes.append(
            "the server reported no cached tokens: every input token is priced as uncached"
        )
    if (line := price_sanity_note(hour, revenue * (1.0 - lic))) is not None:
        notes.append(line)
    return dataclasses.replace(
        cost,
        price_usd_per_million_tokens=PricesPaid(
            prices.input, prices.cached, prices.output, prices.name
        ),
        notes=tuple(notes),
        revenue_usd_per_hour=revenue,
        revenue_usd_per_gpu_hour=revenue / gpus,
        license_usd_per_hour=revenue * lic,
        gross_profit_usd_per_hour=profit,
        gross_margin=None if profit is None else (profit / revenue if revenue > 0 else None),
        breakeven_utilization=(
            None
            if hour is None
            else breakeven_utilization(hour, revenue_usd_per_hour(mix, prices, 1.0), lic)
        ),
    )
