"""One usage normaliser: a server's raw usage block, of any API family, as :class:`Usage`.

Capture (what the provider reported to the agent) and replay (what the server under test
reported to agentx) both read usage through :func:`usage_from`, so a field name one of them
knows, the other knows too. The mapping is the table in docs/trace-format.md ("Usage"):

- OpenAI Chat Completions and every OpenAI-compatible server (vLLM, SGLang, llama.cpp, TRT-LLM,
  DeepSeek): ``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.
  reasoning_tokens``; cached prompt tokens under any name in :func:`cached_from_usage`, else
  llama.cpp's ``timings.cache_n``. A server that answers with the Responses names
  (``input_tokens``/``output_tokens``) is read too.
- OpenAI Responses: ``input_tokens``, ``output_tokens``, ``input_tokens_details.cached_tokens``,
  ``output_tokens_details.reasoning_tokens``.
- Anthropic Messages: ``input_tokens`` *excludes* cache reads and writes, so the total prompt is
  ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``; ``cached_tokens`` is
  the cache read, ``cache_creation_tokens`` the cache write.

- Gemini ``usageMetadata``: ``promptTokenCount`` is the whole prompt (cached content
  included) plus ``toolUsePromptTokenCount`` (the results of server-side tools), ``cached_tokens``
  is ``cachedContentTokenCount``; the output is ``candidatesTokenCount`` *plus*
  ``thoughtsTokenCount`` (Gemini counts thoughts apart; OpenAI's completion tokens include the
  reasoning), ``reasoning_tokens`` the thoughts.

A family is one function of :data:`_FAMILIES`. Unknown is ``None``, never 0; a value that is
not an int (a bool, a string) is unknown.

Impossible counts are unknown too, and named: :func:`checked_usage` returns the usage together
with what was wrong (a count that is not an integer, negative, above :data:`MAX_TOKENS`, or
cached tokens above the prompt), so replay marks the row ``bad_usage`` and capture flags the
exchange, and no such number is ever summed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agentx.apis.names import Api
from agentx.core.models import Usage

Raw = Mapping[str, Any]
# No request has this many tokens (the largest context windows are ~10M): a larger count is a
# server bug, not a measurement.
MAX_TOKENS = 100_000_000


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Check:
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


def _cached(raw: Raw, check: _Check) -> int | None:
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
    return _cached(usage, _Check())


def _first(raw: Raw, check: _Check, *keys: str) -> int | None:
    for key in keys:
        value = check.count(raw, key)
        if value is not None:
            return value
    return None


def chat_usage(raw: Raw, timings: Raw | None, check: _Check) -> Usage:
    cached = _cached(raw, check)
    if cached is None and timings is not None:
        cached = check.count(timings, "cache_n", "timings.")  # llama.cpp: prompt cache reuse
    return Usage(
        prompt_tokens=_first(raw, check, "prompt_tokens", "input_tokens"),
        cached_tokens=cached,
        completion_tokens=_first(raw, check, "completion_tokens", "output_tokens"),
        reasoning_tokens=check.details(raw, "completion_tokens_details", "reasoning_tokens")
        if "completion_tokens_details" in raw
        else check.details(raw, "output_tokens_details", "reasoning_tokens"),
    )


def responses_usage(raw: Raw, timings: Raw | None, check: _Check) -> Usage:
    return Usage(
        prompt_tokens=check.count(raw, "input_tokens"),
        cached_tokens=_cached(raw, check),
        completion_tokens=check.count(raw, "output_tokens"),
        reasoning_tokens=check.details(raw, "output_tokens_details", "reasoning_tokens"),
    )


def anthropic_usage(raw: Raw, timings: Raw | None, check: _Check) -> Usage:
    before = len(check.problems)
    uncached = check.count(raw, "input_tokens")
    read = check.count(raw, "cache_read_input_tokens")
    created = check.count(raw, "cache_creation_input_tokens")
    known = len(check.problems) == before  # an impossible part makes the total unknown
    return Usage(
        prompt_tokens=None
        if uncached is None or not known
        else uncached + (read or 0) + (created or 0),
        cached_tokens=read,
        cache_creation_tokens=created,
        completion_tokens=check.count(raw, "output_tokens"),
    )


def gemini_usage(raw: Raw, timings: Raw | None, check: _Check) -> Usage:
    before = len(check.problems)
    prompt = check.count(raw, "promptTokenCount")
    tool_use = check.count(raw, "toolUsePromptTokenCount")
    prompt_known = len(check.problems) == before
    candidates = check.count(raw, "candidatesTokenCount")
    thoughts = check.count(raw, "thoughtsTokenCount")
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    return Usage(
        prompt_tokens=None if prompt is None or not prompt_known else prompt + (tool_use or 0),
        cached_tokens=check.count(raw, "cachedContentTokenCount"),
        completion_tokens=output,
        reasoning_tokens=thoughts,
    )


_FAMILIES: dict[str, Callable[[Raw, Raw | None, _Check], Usage]] = {
    Api.OPENAI_CHAT: chat_usage,
    Api.OPENAI_RESPONSES: responses_usage,
    Api.ANTHROPIC_MESSAGES: anthropic_usage,
    Api.GEMINI: gemini_usage,
}


def checked_usage(api: str, raw: Any, timings: Any = None) -> tuple[Usage, str | None]:
    """The usage block ``raw`` of an ``api`` response, and what was impossible in it (``None``:
    nothing). Impossible counts are left unknown; cached tokens above the prompt too."""
    check = _Check()
    if raw is not None and not isinstance(raw, Mapping):
        check.problems.append(f"usage is not an object ({_show(raw)})")
    if not isinstance(raw, Mapping):
        raw = {}
    if timings is not None and not isinstance(timings, Mapping):
        timings = None
    usage = _FAMILIES.get(api, chat_usage)(raw, timings, check)
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


def usage_from(api: str, raw: Raw | None, timings: Raw | None = None) -> Usage:
    """The usage block ``raw`` of an ``api`` response (any other API: the OpenAI-compatible
    names). ``timings`` is llama.cpp's sibling of ``usage``, when the response had one."""
    return checked_usage(api, raw, timings)[0]


def merge_usage(acc: dict[str, Any], raw: Any) -> None:
    """Fold a partial usage block into ``acc``: Anthropic streams send usage in pieces
    (``message_start``, then ``message_delta``). A later int value wins; a value that is not
    an int is kept only where no int is known, so :func:`checked_usage` can name it."""
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            if as_int(value) is not None or (value is not None and as_int(acc.get(key)) is None):
                acc[key] = value
