"""Reading token counts out of a raw usage block: what every family's usage reader shares.

A family's reader (``chat_usage`` in :mod:`agentx.apis.openai_chat`, ...) maps its field names
onto :class:`Usage` through a :class:`UsageCheck`, which reads each count and remembers the
impossible ones (not an integer, negative, above :data:`MAX_TOKENS`); :func:`checked` runs a
reader and adds the last check (cached tokens above the prompt). The mapping of every family is
:mod:`agentx.apis.usage`'s table. Unknown is ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agentx.core.models import Usage

Raw = Mapping[str, Any]
# No request has this many tokens (the largest context windows are ~10M): a larger count is a
# server bug, not a measurement.
MAX_TOKENS = 100_000_000


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class UsageCheck:
    """Reads counts out of a usage block, remembering which ones were impossible."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[str] = []

    def count(self, raw: Raw, key: str, where: str = "") -> int | None:
        """``raw[key]`` as a token count; ``None`` when absent, null or impossible."""
        value = raw.get(key)
        if value is None:
            return None
        name = f"{where}{key}"
        if as_int(value) is None:
            self.problems.append(f"{name} is not an integer ({_show(value)})")
            return None
        if not 0 <= value <= MAX_TOKENS:
            self.problems.append(f"{name} = {value} is impossible")
            return None
        result: int = value
        return result

    def obj(self, raw: Raw, key: str) -> Raw | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.problems.append(f"{key} is not an object ({_show(value)})")
            return None
        return value

    def details(self, raw: Raw, key: str, field: str) -> int | None:
        inner = self.obj(raw, key)
        return None if inner is None else self.count(inner, field, f"{key}.")

    def split_sum(self, raw: Raw, key: str, where: str = "") -> int | None:
        """SGLang HiCache reports cached tokens per tier: ``{"device": n, "host": m, ...}``."""
        split = raw.get(key)
        if split is None:
            return None
        if not isinstance(split, Mapping):
            self.problems.append(f"{where}{key} is not an object ({_show(split)})")
            return None
        parts = [self.count(split, tier, f"{where}{key}.") for tier in split]
        return sum(p or 0 for p in parts) if len(parts) == len(split) else None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def cached_count(raw: Raw, check: UsageCheck) -> int | None:
    for key in ("prompt_tokens_details", "input_tokens_details"):
        details = check.obj(raw, key)
        if details is not None:
            value = check.count(details, "cached_tokens", f"{key}.")
            if value is not None:
                return value
            split = check.split_sum(details, "cached_tokens_details", f"{key}.")
            if split is not None:
                return split
    for key in ("cache_read_input_tokens", "prompt_cache_hit_tokens", "cached_tokens"):
        value = check.count(raw, key)
        if value is not None:
            return value
    return check.split_sum(raw, "cached_tokens_details")


def cached_from_usage(usage: Raw) -> int | None:
    """Cached prompt tokens under every vendor name agentx knows; ``None`` when absent."""
    return cached_count(usage, UsageCheck())


def first_count(raw: Raw, check: UsageCheck, *keys: str) -> int | None:
    for key in keys:
        value = check.count(raw, key)
        if value is not None:
            return value
    return None


UsageReader = Callable[[Raw, Raw | None, UsageCheck], Usage]  # (usage, llama.cpp timings, check)


def checked(reader: UsageReader, raw: Any, timings: Any = None) -> tuple[Usage, str | None]:
    """The usage block ``raw`` read by a family's ``reader``, and what was impossible in it
    (``None``: nothing). Impossible counts are left unknown; cached tokens above the prompt too."""
    check = UsageCheck()
    if raw is not None and not isinstance(raw, Mapping):
        check.problems.append(f"usage is not an object ({_show(raw)})")
    if not isinstance(raw, Mapping):
        raw = {}
    if timings is not None and not isinstance(timings, Mapping):
        timings = None
    usage = reader(raw, timings, check)
    if (
        usage.cached_tokens is not None
        and usage.prompt_tokens is not None
        and usage.cached_tokens > usage.prompt_tokens
    ):
        check.problems.append(
            f"cached tokens {usage.cached_tokens} > prompt tokens {usage.prompt_tokens}"
        )
        usage = replace(usage, cached_tokens=None)
    return usage, "; ".join(check.problems) or None


def merge_usage(acc: dict[str, Any], raw: Any) -> None:
    """Fold a partial usage block into ``acc``: Anthropic streams send usage in pieces
    (``message_start``, then ``message_delta``). A later int value wins; a value that is not
    an int is kept only where no int is known, so :func:`checked` can name it."""
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            if as_int(value) is not None or (value is not None and as_int(acc.get(key)) is None):
                acc[key] = value
