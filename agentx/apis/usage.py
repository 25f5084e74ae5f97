"""One usage normaliser: a server's raw usage block, of any API family, as :class:`Usage`.

Capture (what the provider reported to the agent) and replay (what the server under test
reported to agentx) both read usage through :func:`usage_from`, so a field name one of them
knows, the other knows too. The mapping is the table in docs/trace-format.md ("Usage"):

- OpenAI Chat Completions and every OpenAI-compatible server (vLLM, SGLang, llama.cpp, TRT-LLM,
  DeepSeek): ``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.
  reasoning_tokens``; cached prompt tokens under any name in
  :func:`~agentx.apis.usage_counts.cached_from_usage`, else llama.cpp's ``timings.cache_n``. A
  server that answers with the Responses names (``input_tokens``/``output_tokens``) is read too.
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

A family's reader is its :class:`~agentx.apis.family.Family`'s ``usage`` (``chat_usage`` in
:mod:`agentx.apis.openai_chat`, ...); any other API is read with the OpenAI-compatible names.
Unknown is ``None``, never 0; a value that is not an int (a bool, a string) is unknown.

Impossible counts are unknown too, and named: :func:`checked_usage` returns the usage together
with what was wrong (a count that is not an integer, negative, above
:data:`~agentx.apis.usage_counts.MAX_TOKENS`, or cached tokens above the prompt), so replay
marks the row ``bad_usage`` and capture flags the exchange, and no such number is ever summed.
"""

from __future__ import annotations

from typing import Any

from agentx.apis.registry import family
from agentx.apis.usage_counts import Raw, checked
from agentx.core.models import Usage


def checked_usage(api: str, raw: Any, timings: Any = None) -> tuple[Usage, str | None]:
    """The usage block ``raw`` of an ``api`` response, and what was impossible in it (``None``:
    nothing). Impossible counts are left unknown; cached tokens above the prompt too."""
    return checked(family(api).usage, raw, timings)


def usage_from(api: str, raw: Raw | None, timings: Raw | None = None) -> Usage:
    """The usage block ``raw`` of an ``api`` response (any other API: the OpenAI-compatible
    names). ``timings`` is llama.cpp's sibling of ``usage``, when the response had one."""
    return checked_usage(api, raw, timings)[0]
