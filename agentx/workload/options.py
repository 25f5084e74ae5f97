"""``WorkloadOptions``: which sessions of a trace are sent and how their bodies are built, as
``agentx replay``, ``sweep`` and ``simulate`` all take them (each field declared as its option)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from agentx.core.errors import UsageError
from agentx.core.options import Panel, coerce_choices, group, option, option_factory
from agentx.formats.options import ReadOptions
from agentx.workload.scenario import Scenario, scenario_name


class ApiMode(StrEnum):
    """``--api``: which API the requests are sent in."""

    CHAT = "chat"  # every captured family converted to OpenAI chat
    MESSAGES = "messages"  # Anthropic requests to /v1/messages
    NATIVE = "native"  # each request to its captured family's endpoint


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """``--extra-body '{"temperature": 0}'`` -> dict (merged into every request body)."""
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--extra-body must be a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class WorkloadOptions:
    """The sessions a run sends (a seeded sample) and what goes into every body."""

    read: ReadOptions = group(ReadOptions)  # how the trace becomes sessions and threads
    max_entries: int | None = option(
        None,
        "--max-entries",
        min=1,
        metavar="N",
        panel=Panel.LOAD,
        help="only the trace's first N sessions (files, rows), before --sessions samples",
    )
    sessions: int | None = option(
        None,
        "--sessions",
        min=1,
        metavar="N",
        panel=Panel.LOAD,
        help="sample N sessions of the trace (with --seed)",
    )
    seed: int | None = option(  # None: not given (the draws use 0, the markers are random)
        None,
        "--seed",
        metavar="N",
        panel=Panel.LOAD,
        show_default=False,
        help="seed of --sessions sampling, --start-ratio instants and the cache-bust markers: "
        "the same seed sends the same bytes [default: 0 for the draws, random markers]",
    )
    salt: bool = option(
        True,
        "--salt/--no-salt",
        panel=Panel.REQUESTS,
        help="cache-bust marker per tree instance (a session and its subagents) in the first user "
        "message",
    )
    api: ApiMode = option(
        ApiMode.CHAT,
        "--api",
        choices=ApiMode,
        panel=Panel.REQUESTS,
        help="chat (convert to OpenAI chat), messages (Anthropic /v1/messages) or native",
    )
    extra_body: dict[str, Any] = option_factory(
        dict,
        "--extra-body",
        parse=parse_extra_body,
        metavar="JSON",
        panel=Panel.REQUESTS,
        help="JSON object merged into every request body",
    )
    scenario: Scenario | None = option(
        None,
        "--scenario",
        parse=scenario_name,
        choices=Scenario,
        panel=Panel.SCENARIO,
        show_default=False,
        help="agentx or agentx-mvp: agentx-harness's presets (explicit flags win)",
    )

    def __post_init__(self) -> None:
        coerce_choices(self)

    @property
    def rng_seed(self) -> int:
        """The seed of the run's draws (sampling, ``t*``, arrivals): ``--seed``, else 0."""
        return 0 if self.seed is None else self.seed

    def check(self) -> None:
        """Raise :class:`UsageError` on options no run could follow."""
        if self.sessions is not None and self.sessions < 1:
            raise UsageError("--sessions must be at least 1")
        if self.max_entries is not None and self.max_entries < 1:
            raise UsageError("--max-entries must be at least 1")
