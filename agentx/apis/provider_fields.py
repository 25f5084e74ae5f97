"""Provider-only request fields: what only the provider that recorded a request understands.

Anthropic prompt-cache markers (``cache_control``), thinking signatures (``signature``),
encrypted reasoning (``encrypted_content``: Anthropic ``redacted_thinking``, OpenAI Responses),
Gemini's thought signatures (``thoughtSignature``) and whole ``redacted_thinking`` blocks. An OpenAI-compatible server does not know them and
none of them reaches the model's context. Declared once, here: the tokenizer skips them, capture
ignores the cache markers when it matches conversations, scrub flags requests that hold them
(``provider_fields``) and keeps opaque blobs out of anonymised text, replay strips them.
"""

from __future__ import annotations

from agentx.core.models import JSON

CACHE_MARKER_KEYS = frozenset({"cache_control"})  # agents move them from turn to turn
# signatures (Anthropic, Gemini), encrypted reasoning
OPAQUE_KEYS = frozenset({"signature", "encrypted_content", "thoughtSignature"})
PROVIDER_KEYS = CACHE_MARKER_KEYS | OPAQUE_KEYS
PROVIDER_BLOCK_TYPES = frozenset({"redacted_thinking"})  # a whole block of encrypted data


def has_provider_fields(value: JSON) -> bool:
    """Whether any dict in ``value`` holds a provider key or is a provider-only block."""
    if isinstance(value, dict):
        if PROVIDER_KEYS.intersection(value) or _is_provider_block(value):
            return True
        return any(has_provider_fields(v) for v in value.values())
    if isinstance(value, list):
        return any(has_provider_fields(v) for v in value)
    return False


def strip_provider_fields(value: JSON) -> JSON:
    """``value`` without provider keys and without provider-only blocks (a new value)."""
    if isinstance(value, dict):
        return {k: strip_provider_fields(v) for k, v in value.items() if k not in PROVIDER_KEYS}
    if isinstance(value, list):
        return [
            strip_provider_fields(v)
            for v in value
            if not (isinstance(v, dict) and _is_provider_block(v))
        ]
    return value


def _is_provider_block(block: dict[str, JSON]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind in PROVIDER_BLOCK_TYPES


def without_keys(value: JSON, keys: frozenset[str]) -> JSON:
    """``value`` with every dict key in ``keys`` removed, at any depth (blocks are kept)."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value
