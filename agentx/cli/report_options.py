"""Options `replay`, `sweep` and `report` share about what a run is worth and how it is reported:
cost and margin (``agentx/metrics/cost.py``), ``--percentiles``, and ``--config FILE.toml``.

Config-file rule (every command that takes ``--config``): a TOML file whose section named after the
command (``[replay]``, ``[sweep]``, ``[report]``) sets any of its long options, spelt without the
dashes (``time-scale = 0`` or ``time_scale = 0``; flags as booleans, ``salt = false``), and whose
``[cost]`` section sets the cost options for all three. The command line wins over the file, the
file over the defaults. An unknown section or key is a usage error (exit 2).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer

from agentx.metrics.cost import CostOptions, cost_options

COST_PANEL = "Cost and margin"
COST_SECTION = "cost"
COST_PARAMS = (
    "gpu_hour_cost",
    "capex_per_hour",
    "power_kw",
    "usd_per_kwh",
    "pue",
    "hosting_per_hour",
    "gpus",
    "utilization",
    "price",
    "price_preset",
    "price_file",
    "license_fraction",
)
COMMAND_SECTIONS = ("replay", "sweep", "report")


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=COST_PANEL, **kw)


GpuHourCost = Annotated[
    float | None,
    _opt("--gpu-hour-cost", metavar="USD", help="what one accelerator-hour costs (all-in)"),
]
CapexPerHour = Annotated[
    float | None,
    _opt("--capex-per-hour", metavar="USD", help="part of the hour: amortised purchase, per GPU"),
]
PowerKw = Annotated[
    float | None,
    _opt("--power-kw", metavar="KW", help="part of the hour: average power draw per GPU, kW"),
]
UsdPerKwh = Annotated[
    float | None, _opt("--usd-per-kwh", metavar="USD", help="part of the hour: electricity price")
]
Pue = Annotated[
    float | None,
    _opt("--pue", metavar="F", help="part of the hour: data-centre PUE (>= 1) [default: 1]"),
]
HostingPerHour = Annotated[
    float | None,
    _opt("--hosting-per-hour", metavar="USD", help="part of the hour: hosting per GPU"),
]
Gpus = Annotated[
    int, _opt("--gpus", metavar="N", min=1, help="accelerators the measured server used")
]
Utilization = Annotated[
    float,
    _opt(
        "--utilization",
        metavar="U",
        min=0.0,
        max=1.0,
        help="share of the hour the measured load runs (0 < U <= 1)",
    ),
]
Price = Annotated[
    str | None,
    _opt(
        "--price",
        metavar="SPEC",
        help="USD per million tokens: input=X,cached=Y,output=Z (cached defaults to input)",
    ),
]
PricePreset = Annotated[
    str | None,
    _opt(
        "--price-preset",
        metavar="NAME",
        help="prices by name from --price-file (bundled: agentx example-path prices)",
    ),
]
PriceFile = Annotated[
    Path | None,
    _opt(
        "--price-file",
        metavar="FILE",
        help="a TOML of \\[price.NAME] tables [default: the bundled one]",
    ),
]
LicenseFraction = Annotated[
    float,
    _opt(
        "--license-fraction",
        metavar="F",
        min=0.0,
        max=0.999,
        help="share of revenue paid to the model's licensor",
    ),
]
Percentiles = Annotated[
    str | None,
    typer.Option(
        "--percentiles",
        metavar="LIST",
        help="percentiles to report beyond p50/p90/p99, e.g. 50,90,95,99,99.9",
    ),
]


def cost_from_flags(values: dict[str, Any]) -> CostOptions | None:
    """The cost flags' values (by parameter name) -> :class:`CostOptions` or ``None``."""
    return cost_options(
        gpu_hour_cost=values.get("gpu_hour_cost"),
        capex_per_hour=values.get("capex_per_hour"),
        power_kw=values.get("power_kw"),
        usd_per_kwh=values.get("usd_per_kwh"),
        pue=values.get("pue"),
        hosting_per_hour=values.get("hosting_per_hour"),
        gpus=values.get("gpus", 1),
        utilization=values.get("utilization", 1.0),
        price=values.get("price"),
        price_preset=values.get("price_preset"),
        price_file=values.get("price_file"),
        license_fraction=values.get("license_fraction", 0.0),
    )


def _load_config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    if value is None:
        return None
    command = ctx.info_name or (ctx.command.name or "")
    try:
        data = tomllib.loads(value.read_text(encoding="utf-8"))
    except OSError as exc:
        raise typer.BadParameter(
            f"{value}: {exc.strerror or exc}", ctx, param_hint="'--config'"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise typer.BadParameter(
            f"{value}: not valid TOML: {exc}", ctx, param_hint="'--config'"
        ) from None
    known = {p.name for p in ctx.command.params if p.name and p.name != param.name}
    defaults: dict[str, Any] = {}
    for section, table in data.items():
        if section not in (*COMMAND_SECTIONS, COST_SECTION):
            raise typer.BadParameter(
                f"{value}: unknown section [{section}] (known: {', '.join((*COMMAND_SECTIONS, COST_SECTION))})",
                ctx,
                param_hint="'--config'",
            )
        if section not in (command, COST_SECTION) or not isinstance(table, dict):
            continue
        for key, v in table.items():
            name = key.replace("-", "_")
            if (section == COST_SECTION and name not in COST_PARAMS) or name not in known:
                raise typer.BadParameter(
                    f"{value}: [{section}] {key}: not an option of agentx {command}",
                    ctx,
                    param_hint="'--config'",
                )
            if name == "price" and isinstance(v, dict):  # price = {input = 3, output = 15}
                v = ",".join(f"{k}={x}" for k, x in v.items())
            defaults[name] = v
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


Config = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE.toml",
        is_eager=True,
        callback=_load_config,
        help="read options from a TOML file: \\[COMMAND] and \\[cost] sections (docs/cli.md)",
    ),
]
