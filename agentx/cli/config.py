"""``--config FILE.toml``: options of ``replay``, ``sweep`` and ``report`` from a file.

Config-file rule (every command that takes ``--config``): a TOML file whose section named after the
command (``[replay]``, ``[sweep]``, ``[report]``) sets any of its long options, spelt without the
dashes (``time-scale = 0`` or ``time_scale = 0``; flags as booleans, ``salt = false``), and whose
``[cost]`` section sets the cost options (:class:`agentx.metrics.cost.CostInputs`) for all three.
The command line wins over the file, the file over the defaults. An unknown section or key is a
usage error (exit 2).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer

from agentx.core.options import Panel, declared
from agentx.metrics.cost import CostInputs

COST_SECTION = "cost"
COMMAND_SECTIONS = ("replay", "sweep", "report")


def _key(option: str) -> str:
    """``--time-scale`` -> ``time_scale``: how a file spells an option."""
    return option.lstrip("-").replace("-", "_")


COST_KEYS = frozenset(
    _key(name) for d in declared(CostInputs) for name in d.flag.names if name.startswith("--")
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
    # the file's key -> the parameter: a long option's name without its dashes
    known = {
        _key(opt): p.name
        for p in ctx.command.params
        if p.name and p.name != param.name
        for opt in p.opts
        if opt.startswith("--")
    }
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
            name = _key(key)
            if (section == COST_SECTION and name not in COST_KEYS) or name not in known:
                raise typer.BadParameter(
                    f"{value}: [{section}] {key}: not an option of agentx {command}",
                    ctx,
                    param_hint="'--config'",
                )
            if name == "price" and isinstance(v, dict):  # price = {input = 3, output = 15}
                v = ",".join(f"{k}={x}" for k, x in v.items())
            defaults[known[name]] = v
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


Config = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE.toml",
        is_eager=True,
        callback=_load_config,
        rich_help_panel=Panel.OUTPUT,
        help="read options from a TOML file: \\[COMMAND] and \\[cost] sections (docs/cli.md)",
    ),
]
