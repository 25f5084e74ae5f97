"""The registry: each :class:`~agentx.apis.names.Api` of a model call to its
:class:`~agentx.apis.family.Family`, and what is decided by asking every family (which API a
request speaks). A new family is one line here."""

from __future__ import annotations

from agentx.apis import anthropic, gemini, openai_chat, openai_responses
from agentx.apis.family import Family
from agentx.apis.names import Api
from agentx.core.models import JSON

FAMILIES: dict[str, Family] = {
    Api.OPENAI_CHAT: openai_chat.FAMILY,
    Api.OPENAI_RESPONSES: openai_responses.FAMILY,
    Api.ANTHROPIC_MESSAGES: anthropic.FAMILY,
    Api.GEMINI: gemini.FAMILY,
}


def family(api: str) -> Family:
    """The family of ``api``; any other API (``other``, an unknown name) is read and sent as
    OpenAI chat, the shape every OpenAI-compatible server speaks."""
    return FAMILIES.get(api, openai_chat.FAMILY)


def classify(method: str, path: str) -> Api:
    """The API family of a request, from its method and path (query ignored). ``WS`` is a
    message sent over a WebSocket (the Responses API's ``response.create``)."""
    if method.upper() not in ("POST", "WS"):
        return Api.OTHER
    p = path.split("?", 1)[0].rstrip("/")
    for fam in FAMILIES.values():
        if fam.speaks(p):
            return fam.api
    return Api.OTHER


def max_output_tokens(body: JSON) -> int | None:
    if not isinstance(body, dict):
        return None
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        v = body.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    config = body.get("generationConfig")  # Gemini
    if isinstance(config, dict):
        v = config.get("maxOutputTokens")
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None
