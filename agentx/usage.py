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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agentx.models import (
    API_ANTHROPIC_MESSAGES,
    API_GEMINI,
    API_OPENAI_CHAT,
    API_OPENAI_RESPONSES,
    JSON,
    Response,
    Usage,
)
from agentx.tokens import count_request_tokens, count_tokens

Raw = Mapping[str, Any]


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _details(raw: Raw, key: str, field: str) -> int | None:
    inner = raw.get(key)
    return as_int(inner.get(field)) if isinstance(inner, Mapping) else None


def _split_sum(split: Any) -> int | None:
    """SGLang HiCache reports cached tokens per tier: ``{"device": n, "host": m, ...}``."""
    if not isinstance(split, Mapping):
        return None
    return sum(as_int(v) or 0 for v in split.values())


def cached_from_usage(usage: Raw) -> int | None:
    """Cached prompt tokens under every vendor name agentx knows; ``None`` when absent."""
    for key in ("prompt_tokens_details", "input_tokens_details"):
        details = usage.get(key)
        if isinstance(details, Mapping):
            value = as_int(details.get("cached_tokens"))
            if value is not None:
                return value
            split = _split_sum(details.get("cached_tokens_details"))
            if split is not None:
                return split
    for key in ("cache_read_input_tokens", "prompt_cache_hit_tokens", "cached_tokens"):
        value = as_int(usage.get(key))
        if value is not None:
            return value
    return _split_sum(usage.get("cached_tokens_details"))


def _first(raw: Raw, *keys: str) -> int | None:
    for key in keys:
        value = as_int(raw.get(key))
        if value is not None:
            return value
    return None


def chat_usage(raw: Raw, timings: Raw | None = None) -> Usage:
    cached = cached_from_usage(raw)
    if cached is None and timings is not None:
        cached = as_int(timings.get("cache_n"))  # llama.cpp: prompt tokens reused from its cache
    return Usage(
        prompt_tokens=_first(raw, "prompt_tokens", "input_tokens"),
        cached_tokens=cached,
        completion_tokens=_first(raw, "completion_tokens", "output_tokens"),
        reasoning_tokens=_details(raw, "completion_tokens_details", "reasoning_tokens")
        if "completion_tokens_details" in raw
        else _details(raw, "output_tokens_details", "reasoning_tokens"),
    )


def responses_usage(raw: Raw, timings: Raw | None = None) -> Usage:
    return Usage(
        prompt_tokens=as_int(raw.get("input_tokens")),
        cached_tokens=cached_from_usage(raw),
        completion_tokens=as_int(raw.get("output_tokens")),
        reasoning_tokens=_details(raw, "output_tokens_details", "reasoning_tokens"),
    )


def anthropic_usage(raw: Raw, timings: Raw | None = None) -> Usage:
    uncached = as_int(raw.get("input_tokens"))
    read = as_int(raw.get("cache_read_input_tokens"))
    created = as_int(raw.get("cache_creation_input_tokens"))
    return Usage(
        prompt_tokens=None if uncached is None else uncached + (read or 0) + (created or 0),
        cached_tokens=read,
        cache_creation_tokens=created,
        completion_tokens=as_int(raw.get("output_tokens")),
    )


def gemini_usage(raw: Raw, timings: Raw | None = None) -> Usage:
    prompt = as_int(raw.get("promptTokenCount"))
    tool_use = as_int(raw.get("toolUsePromptTokenCount"))
    candidates = as_int(raw.get("candidatesTokenCount"))
    thoughts = as_int(raw.get("thoughtsTokenCount"))
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    return Usage(
        prompt_tokens=None if prompt is None else prompt + (tool_use or 0),
        cached_tokens=as_int(raw.get("cachedContentTokenCount")),
        completion_tokens=output,
        reasoning_tokens=thoughts,
    )


_FAMILIES: dict[str, Callable[[Raw, Raw | None], Usage]] = {
    API_OPENAI_CHAT: chat_usage,
    API_OPENAI_RESPONSES: responses_usage,
    API_ANTHROPIC_MESSAGES: anthropic_usage,
    API_GEMINI: gemini_usage,
}


def usage_from(api: str, raw: Raw | None, timings: Raw | None = None) -> Usage:
    """The usage block ``raw`` of an ``api`` response (any other API: the OpenAI-compatible
    names). ``timings`` is llama.cpp's sibling of ``usage``, when the response had one."""
    if not isinstance(raw, Mapping):
        raw = {}
    if timings is not None and not isinstance(timings, Mapping):
        timings = None
    return _FAMILIES.get(api, chat_usage)(raw, timings)


def estimate_missing(api: str, body: JSON, response: Response, usage: Usage) -> Usage | None:
    """``usage`` with its unknown prompt and completion counts counted by agentx's tokenizer
    (the request's deterministic rendering, the answer's text, reasoning and tool-call
    arguments), or ``None`` when both were reported. Flag the row ``usage_estimated``."""
    if usage.prompt_tokens is not None and usage.completion_tokens is not None:
        return None
    prompt = usage.prompt_tokens
    if prompt is None:
        prompt = count_request_tokens(api, body)
    completion = usage.completion_tokens
    if completion is None:
        pieces = [response.text or "", response.reasoning or ""]
        for call in response.tool_calls:
            if isinstance(call, Mapping):
                pieces.extend(str(call.get(k) or "") for k in ("name", "arguments"))
        text = "".join(pieces)
        completion = count_tokens(text) if text else 0
    return replace(usage, prompt_tokens=prompt, completion_tokens=completion)


def merge_usage(acc: dict[str, Any], raw: Any) -> None:
    """Fold a partial usage block into ``acc``: Anthropic streams send usage in pieces
    (``message_start``, then ``message_delta``), and a later int value wins."""
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            if as_int(value) is not None:
                acc[key] = value
