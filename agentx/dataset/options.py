"""The options of ``agentx dataset pack`` and ``push``, each declared as the flag that sets it."""

from __future__ import annotations

from dataclasses import dataclass

from agentx.core.errors import UsageError
from agentx.core.options import Panel, flag, option, parse_tokens, required

DEFAULT_CONTEXT = 262_144  # 256Ki: the context of the long-context serving configurations
CONTEXT_FLAG = "--context-configs"


def parse_context_list(text: str) -> tuple[int, ...]:
    """``256Ki,1Mi`` -> ``(262144, 1048576)``; ``none`` -> no context config."""
    if text.strip().lower() in ("", "none"):
        return ()
    limits = tuple(parse_tokens(t) for t in text.split(",") if t.strip())
    if any(n < 1 for n in limits):
        raise UsageError(f"{CONTEXT_FLAG}: a context limit is at least 1 token")
    return limits


REPO = flag(
    "--repo",
    metavar="ORG/NAME",
    panel=Panel.DATASET,
    help="the Hugging Face dataset repository",
)


@dataclass(frozen=True, slots=True)
class PackOptions:
    """What ``agentx dataset pack`` writes besides the ``all`` config, and the card's fields."""

    with_text: bool = option(
        False,
        "--with-text",
        panel=Panel.CLEANING,
        help="pack rows with their original text (refused without it; anonymized or "
        "hash-only rows need nothing)",
    )
    context_configs: tuple[int, ...] = option(
        (DEFAULT_CONTEXT,),
        CONTEXT_FLAG,
        parse=parse_context_list,
        metavar="TOKENS,...",
        panel=Panel.DATASET,
        help="a config per context limit: the sessions whose every request fits it, prompt + "
        "output (K/M/Ki/Mi suffixes; none: no such config) [default: 256Ki]",
    )
    main_config: bool = option(
        True,
        "--main-config/--no-main-config",
        panel=Panel.DATASET,
        help="a config of the main agents' rows (no subagent thread)",
    )
    agent_configs: bool = option(
        True,
        "--agent-configs/--no-agent-configs",
        panel=Panel.DATASET,
        help="a config per agent, when there are several",
    )
    weka: bool = option(
        True,
        "--weka/--no-weka",
        panel=Panel.DATASET,
        help="also write the sessions as Weka rows, traces.jsonl (agentx-harness, AIPerf)",
    )
    mooncake: bool = option(
        True,
        "--mooncake/--no-mooncake",
        panel=Panel.DATASET,
        help="also write the model calls as Mooncake lines, mooncake.jsonl (vllm bench)",
    )
    plots: bool = option(
        True, "--plots/--no-plots", panel=Panel.DATASET, help="draw the card's PNG charts"
    )
    rows_per_file: int = option(
        100_000,
        "--rows-per-file",
        min=1,
        metavar="N",
        panel=Panel.DATASET,
        help="rows per Parquet file of a config",
    )
    name: str | None = option(
        None,
        "--name",
        metavar="TEXT",
        panel=Panel.DATASET,
        show_default=False,
        help="the card's pretty_name [default: the output directory's name]",
    )
    license: str = option(
        "other",
        "--license",
        metavar="ID",
        panel=Panel.DATASET,
        help="the card's license, a Hugging Face license id (apache-2.0, cc-by-4.0, ...)",
    )
    description: str | None = option(
        None,
        "--description",
        metavar="TEXT",
        panel=Panel.DATASET,
        show_default=False,
        help="the card's opening paragraph",
    )
    repo: str | None = option(None, flag=REPO)

    def __post_init__(self) -> None:
        if self.repo is not None:
            check_repo(self.repo)
        if self.rows_per_file < 1:
            raise UsageError("--rows-per-file must be at least 1")


@dataclass(frozen=True, slots=True)
class PushOptions:
    """Where ``agentx dataset push`` uploads."""

    repo: str = required(*REPO.names, metavar=REPO.metavar, panel=REPO.panel, help=REPO.help)
    private: bool = option(
        False,
        "--private",
        panel=Panel.DATASET,
        help="create the repository private (an existing one keeps its visibility)",
    )

    def __post_init__(self) -> None:
        check_repo(self.repo)


def check_repo(repo: str) -> str:
    """``org/name``, or the usage error that says so."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts):
        raise UsageError(f"--repo {repo!r}: expected ORG/NAME (a Hugging Face dataset repository)")
    return repo
