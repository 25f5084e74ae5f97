"""The layout of a packed dataset: where each file goes and which rows each config holds.

::

    DIR/
      README.md                                  the card: YAML front matter + generated text
      manifest.json                              agentx.dataset/1 (agentx/results/dataset.py)
      data/<config>/<split>-NNNNN-of-MMMMM.parquet   agentx trace files, one config per folder
      traces.jsonl                               the sessions of ``all`` as Weka rows (optional)
      mooncake.jsonl                             the same model calls as Mooncake lines (optional)
      plots/*.png                                the card's charts

The configs are row filters over ``all``: ``main`` keeps the rows of the main agents (no
subagent thread), ``context-<n>`` the sessions whose every request fits ``n`` tokens of
context (prompt + output), ``agent-<name>`` one agent's rows (only when several agents are
present). A config that would hold no row is not written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from agentx.core.flags import FLAG_SUBAGENT
from agentx.core.models import Exchange

README = "README.md"
DATA = "data"
WEKA_FILE = "traces.jsonl"
MOONCAKE_FILE = "mooncake.jsonl"
PLOTS = "plots"
SPLIT = "train"
DEFAULT_CONFIG = "all"
WEKA_CONFIG = "weka"  # traces.jsonl as a config: datasets.load_dataset(DIR, "weka")
MOONCAKE_CONFIG = "mooncake"
UNKNOWN_AGENT = "unknown"
# files the hub or a download adds beside a dataset's own, never in its manifest
FOREIGN = frozenset({".gitattributes"})


def shard_name(split: str, index: int, count: int) -> str:
    """``train-00000-of-00002.parquet``: the Hugging Face name of a split's file."""
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def tokens_label(n: int) -> str:
    """A context limit as a config name's suffix: 262144 -> ``256k``, 1048576 -> ``1m`` (``k``
    and ``m`` are 1024 and 1024², as context lengths are counted); any other count as itself
    (256000 -> ``256000``: never a ``k`` that means something else)."""
    if n % 1000 == 0:
        return str(n)
    if n % (1 << 20) == 0:
        return f"{n >> 20}m"
    if n % (1 << 10) == 0:
        return f"{n >> 10}k"
    return str(n)


def agent_name(ex: Exchange) -> str:
    return ex.agent or UNKNOWN_AGENT


class ConfigKind(StrEnum):
    ALL = "all"
    MAIN = "main"
    CONTEXT = "context"
    AGENT = "agent"


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What the gate's pass learnt of a session: its rows, its peak context (largest prompt +
    output of its requests, tokens) and its agents."""

    rows: int
    peak_context_tokens: int
    agents: frozenset[str]


@dataclass(frozen=True, slots=True)
class ConfigSpec:
    """One config: its name, what it says of itself, and the rows it keeps."""

    kind: ConfigKind
    name: str
    description: str
    context_tokens: int | None = None
    agent: str | None = None

    def keeps(self, ex: Exchange, session: SessionFacts) -> bool:
        if self.kind is ConfigKind.MAIN:
            return FLAG_SUBAGENT not in ex.flags
        if self.kind is ConfigKind.CONTEXT:
            assert self.context_tokens is not None
            return session.peak_context_tokens <= self.context_tokens
        if self.kind is ConfigKind.AGENT:
            return agent_name(ex) == self.agent
        return True


def config_specs(
    sessions: Mapping[str, SessionFacts],
    *,
    context_limits: Iterable[int],
    main: bool,
    per_agent: bool,
) -> list[ConfigSpec]:
    """The configs of a dataset whose sessions are ``sessions``, ``all`` first."""
    specs = [ConfigSpec(ConfigKind.ALL, DEFAULT_CONFIG, "every row")]
    if main:
        specs.append(
            ConfigSpec(ConfigKind.MAIN, "main", "the main agents' rows: no subagent thread")
        )
    for limit in sorted(set(context_limits)):
        specs.append(
            ConfigSpec(
                ConfigKind.CONTEXT,
                f"context-{tokens_label(limit)}",
                f"the sessions whose every request fits {limit:,} tokens of context "
                "(prompt + output)",
                context_tokens=limit,
            )
        )
    agents = sorted({a for s in sessions.values() for a in s.agents})
    if per_agent and len(agents) > 1:
        specs.extend(
            ConfigSpec(ConfigKind.AGENT, f"agent-{a}", f"the rows of {a}", agent=a) for a in agents
        )
    return specs
