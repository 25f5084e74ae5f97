"""What a request body holds, whatever its family: where its conversation and its system prompt
are (:func:`conversation_key`, :func:`system_key`), the conversation itself
(:func:`conversation`), and an exchange's metadata, which asks whether there is one
(:func:`exchange_meta`)."""

from __future__ import annotations

from agentx.apis.registry import family
from agentx.core.models import JSON, Exchange, ExchangeMeta


def conversation_key(api: str) -> str:
    """The body key of ``api``'s conversation: ``messages``, ``input`` or ``contents``."""
    return family(api).conversation_key


def system_key(api: str) -> str:
    """The body key of ``api``'s system prompt: ``system``, ``instructions`` or
    ``systemInstruction`` (OpenAI chat keeps it in ``messages``: its ``system`` is unused)."""
    return family(api).system_key


def conversation(api: str, body: JSON) -> list[JSON]:
    """The request's growing list: ``messages``, ``input`` (Responses) or ``contents`` (Gemini);
    a string ``input`` is one user message."""
    if not isinstance(body, dict):
        return []
    items = body.get(conversation_key(api))
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items) if isinstance(items, list) else []


def exchange_meta(ex: Exchange, locator: int = -1, parent: str | None = None) -> ExchangeMeta:
    """The metadata of a loaded exchange (``parent``: its parent request, when ``ex`` lacks it)."""
    body = ex.request
    own = False  # a conversation of its own (text), as conversation() finds it
    if isinstance(body, dict):
        items = body.get(conversation_key(ex.api))
        own = isinstance(items, str) or (isinstance(items, list) and len(items) > 0)
    hash_only = not own and ex.hash_ids is not None and bool(ex.hash_block_size)
    return ExchangeMeta(
        request_id=ex.request_id,
        session_id=ex.session_id,
        thread_id=ex.thread_id,
        api=ex.api,
        start_wall_ns=ex.timing.start_wall_ns,
        e2e_ns=ex.timing.e2e_ns,
        ttft_ns=ex.timing.ttft_ns,
        parent_request_id=ex.parent_request_id if parent is None else parent,
        status=ex.status,
        model=ex.model,
        prompt_tokens=ex.usage.prompt_tokens,
        completion_tokens=ex.usage.completion_tokens,
        think_time_s=ex.think_time_s,
        api_time_s=ex.api_time_s,
        flags=ex.flags,
        hash_only=hash_only,
        has_prompt=own or hash_only,
        locator=locator,
    )
