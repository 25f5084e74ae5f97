"""Value types shared by every pipeline stage: one captured (or imported) model exchange.

All token fields use OpenAI's usage names. Unknown is ``None``, never ``0``.
Durations are monotonic-clock nanoseconds relative to the request's start; ``start_wall_ns``
is wall clock and only orders and labels rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = Any  # a value orjson can round-trip: dict, list, str, int, float, bool or None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage normalised across vendors (see docs/trace-format.md for the mapping).

    ``prompt_tokens`` is the *total* input (Anthropic's ``input_tokens`` + cache reads + cache
    writes); ``cached_tokens`` the part read from the provider's prefix cache;
    ``cache_creation_tokens`` the part written to it.
    """

    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Timing:
    """When the exchange happened. Offsets are from the moment the request was sent."""

    start_wall_ns: int
    ttfb_ns: int | None = None  # first response byte
    ttft_ns: int | None = None  # first chunk carrying a generated token
    e2e_ns: int | None = None  # last byte of the response
    chunk_offsets_ns: tuple[int, ...] = ()  # arrival offset of every response chunk


@dataclass(frozen=True, slots=True)
class Response:
    """What the model answered, assembled from the stream or the JSON body."""

    text: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[JSON, ...] = ()  # [{"id", "name", "arguments"}] with arguments as a string
    stop_reason: str | None = None
    message: JSON = None  # the assistant turn in the API's own shape, when it could be built


@dataclass(frozen=True, slots=True)
class Credential:
    """What is kept of a credential: never the secret itself."""

    header: str  # e.g. "authorization", "x-api-key", "query:key"
    family: str | None  # e.g. "sk-ant-", "sk-proj-", "Bearer"
    salted_hash: str  # hex sha256 of (trace salt + secret), first 16 chars


@dataclass(frozen=True, slots=True)
class Exchange:
    """One model call: the request exactly as the agent sent it, and what came back.

    ``request`` is the full JSON body. The trace store keeps only the messages a request appends
    to its parent's conversation and rebuilds the full body on read.
    ``hash_ids`` is set for hash-only imported traces (Weka, Mooncake), whose requests carry no
    text; ``Usage.prompt_tokens`` then holds the input length. ``import_fields`` is what an
    importer keeps of its source record beyond the other fields, so that exporting to the same
    format gives the record back exactly (see docs/trace-format.md).
    """

    request_id: str
    session_id: str
    thread_id: str
    api: str
    request: JSON
    timing: Timing
    trace_id: str = ""
    parent_request_id: str | None = None
    method: str = "POST"
    path: str = ""
    # where the request went: ``host`` or ``host:port`` (a port other than the scheme's), as
    # the proxy connected; None where not recorded (traces before v1.2, imports)
    host: str | None = None
    status: int | None = None
    model: str | None = None
    response: Response = field(default_factory=Response)
    usage: Usage = field(default_factory=Usage)
    think_time_s: float | None = None  # thread's previous response end -> this request's start
    api_time_s: float | None = None  # imported traces: recorded server time
    client: str | None = None  # User-Agent
    agent: str | None = None  # e.g. "claude-code", "codex", "aider"
    credentials: tuple[Credential, ...] = ()
    flags: tuple[str, ...] = ()  # trace flags: names in agentx.core.flags
    error: str | None = None
    hash_ids: tuple[int, ...] | None = None
    hash_block_size: int | None = None
    import_fields: JSON = None  # a JSON object, or None


@dataclass(frozen=True, slots=True)
class ExchangeMeta:
    """An exchange without its request body and hash ids: what a replay plans from.

    ``locator`` says where the source finds the exchange again (a row number, a file's n-th
    request, a line's byte offset: the source's business). ``hash_only``: the prompt is
    described by block-hash ids (text is synthesised at replay time). ``has_prompt``: there is
    a conversation (or hash ids) to send.
    """

    request_id: str
    session_id: str
    thread_id: str
    api: str
    start_wall_ns: int
    e2e_ns: int | None = None
    ttft_ns: int | None = None
    parent_request_id: str | None = None
    status: int | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    think_time_s: float | None = None
    api_time_s: float | None = None
    flags: tuple[str, ...] = ()
    hash_only: bool = False
    has_prompt: bool = True
    locator: int = -1
