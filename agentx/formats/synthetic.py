"""Hash-only rows given synthetic text: what ``agentx convert --with-text`` stores and what replay
sends for a row that has only block ids (:func:`with_text`)."""

from __future__ import annotations

from dataclasses import replace

from agentx.apis import MODEL_APIS
from agentx.core.models import Exchange
from agentx.prefixcache.synth import hash_id_text


def with_text(ex: Exchange) -> Exchange:
    """A hash-only exchange with its synthetic prompt as an ``openai.chat`` request."""
    if ex.hash_ids is None or not ex.hash_block_size or ex.api not in MODEL_APIS:
        return ex
    body = ex.request if isinstance(ex.request, dict) else {}
    if body.get("messages"):
        return ex  # it has a prompt of its own (Mooncake text_input)
    n = (
        ex.usage.prompt_tokens
        if ex.usage.prompt_tokens is not None
        else len(ex.hash_ids) * ex.hash_block_size
    )
    request: dict[str, object] = {}
    if ex.model is not None:
        request["model"] = ex.model
    request["messages"] = [
        {"role": "user", "content": hash_id_text(ex.hash_ids, ex.hash_block_size, n)}
    ]
    if ex.usage.completion_tokens is not None:
        request["max_tokens"] = ex.usage.completion_tokens
    return replace(ex, request={**body, **request})
