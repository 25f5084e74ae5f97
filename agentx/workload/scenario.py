"""``--scenario``: presets that set a replay up as agentx-harness's scenarios do.

``agentx`` is agentx-harness 1.0.12's default (``aiperf/common/scenario/inferencex_agentx_mvp.py``,
``AGENTX``); ``agentx-mvp`` (alias ``inferencex-agentx-mvp``) is its MVP scenario. A preset only
fills the options the user did not give: explicit flags win. What agentx always does anyway
(streaming with usage, output lengths pinned with ``ignore_eos`` where the server honours it) is
not a preset setting; ``ignore_eos`` is forced on, as the harness requires it.

``--max-entries 393`` is the harness's ``conversation_num_dataset_entries: 393`` (the size of
``cc-traces-weka-062126``): the harness loads only the first 393 traces of any corpus it is given
with the ``agentx`` scenario, in file (or row) order, before sampling; ``--max-entries N`` gives
another cap.

| option | ``agentx`` | ``agentx-mvp`` |
|---|---|---|
| ``--duration`` | 3600 s | 1800 s |
| ``--start-ratio`` | 0.25:0.75 | 0:1 |
| ``--warmup`` (per lane, after the primers) | 10 | 0 |
| ``--trace-idle-cap`` | 300 s | none |
| ``--system-idle-cap`` | 10 s | 10 s |
| ``--max-failed-ratio`` | 0.10 | none |
| ``--min-coverage`` (windows >= 900 s) | 0.95 | 0.95 |
| ``--seed`` | 42 | random (written to summary.json) |
| ``--max-entries`` (the trace's first sessions) | 393 | all |
| ``--timeout`` | 21600 s | 21600 s |
| ``--ignore-eos`` | on | on |
| cache-bust marker (``--salt``) | on | on |
"""

from __future__ import annotations

import secrets
from enum import StrEnum
from typing import Any

from agentx.core.errors import UsageError

RANDOM_SEED = "random"  # a preset value: draw a seed (63 bits, as the harness) and record it


class Scenario(StrEnum):
    AGENTX = "agentx"
    AGENTX_MVP = "agentx-mvp"


# A preset's values by the field names of replay's options (agentx.replay.options); simulate
# takes those its own options have.
PRESETS: dict[Scenario, dict[str, Any]] = {
    Scenario.AGENTX: {
        "duration_s": 3600.0,
        "start_ratio": (0.25, 0.75),
        "warmup": 10,
        "trace_idle_cap_s": 300.0,
        "system_idle_cap_s": 10.0,
        "max_failed_ratio": 0.10,
        "min_coverage": 0.95,
        "seed": 42,
        "max_entries": 393,
        "timeout_s": 21600.0,
        "ignore_eos": True,
        "salt": True,
    },
    Scenario.AGENTX_MVP: {
        "duration_s": 1800.0,
        "start_ratio": (0.0, 1.0),
        "warmup": 0,
        "system_idle_cap_s": 10.0,
        "min_coverage": 0.95,
        "seed": RANDOM_SEED,
        "timeout_s": 21600.0,
        "ignore_eos": True,
        "salt": True,
    },
}
ALIASES = {"inferencex-agentx-mvp": Scenario.AGENTX_MVP}


def scenario_name(name: str) -> Scenario:
    """A preset's name (or alias) as its :class:`Scenario`."""
    canonical = ALIASES.get(name, name)
    if canonical not in PRESETS:
        raise UsageError(f"--scenario must be one of {', '.join(Scenario)}, got {name!r}")
    return Scenario(canonical)


def scenario_values(scenario: str | None, **explicit: Any) -> dict[str, Any]:
    """The flat values of replay's options (:func:`agentx.core.options.build`) from a preset and
    the options given explicitly (``None`` = not given; explicit values win), with ``scenario``
    set to the preset. ``simulate`` takes those its own options have."""
    given = {k: v for k, v in explicit.items() if v is not None}
    if scenario is None:
        return given
    name = scenario_name(scenario)
    values: dict[str, Any] = dict(PRESETS[name])
    values.update(given)
    if values.get("seed") == RANDOM_SEED:
        values["seed"] = secrets.randbits(63)
    return values | {"scenario": name}
