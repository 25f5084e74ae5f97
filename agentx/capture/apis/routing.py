"""Which API family a request speaks, and the assembler for its response."""

from __future__ import annotations

from agentx.apis import Api
from agentx.apis.anthropic import AnthropicAssembler
from agentx.apis.assemble import Assembler
from agentx.apis.gemini import GeminiAssembler
from agentx.apis.openai_chat import ChatAssembler
from agentx.apis.openai_responses import ResponsesAssembler
from agentx.core.models import JSON


def classify(method: str, path: str) -> str:
    """The API family of a request, from its method and path (query ignored). ``WS`` is a
    message sent over a WebSocket (the Responses API's ``response.create``)."""
    if method.upper() not in ("POST", "WS"):
        return Api.OTHER
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/messages") and not p.endswith("/batches/messages"):
        return Api.ANTHROPIC_MESSAGES
    if p.endswith("/chat/completions"):
        return Api.OPENAI_CHAT
    if p.endswith("/responses") or p.endswith("/responses/compact"):
        return Api.OPENAI_RESPONSES
    if "/models/" in p and (p.endswith(":generateContent") or p.endswith(":streamGenerateContent")):
        return Api.GEMINI
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


def make_assembler(api: str) -> Assembler:
    if api == Api.ANTHROPIC_MESSAGES:
        return AnthropicAssembler()
    if api == Api.OPENAI_CHAT:
        return ChatAssembler()
    if api == Api.OPENAI_RESPONSES:
        return ResponsesAssembler()
    if api == Api.GEMINI:
        return GeminiAssembler()
    raise ValueError(f"no assembler for api {api!r}")
