"""Validation of incoming requests, with the errors an OpenAI- or Anthropic-compatible server
would answer. Only what the simulation needs is checked; unknown fields are accepted."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from agentx.models import API_ANTHROPIC_MESSAGES, API_OPENAI_CHAT, JSON

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_ANTHROPIC_ROLES = frozenset({"user", "assistant"})


class RequestError(Exception):
    """A request the server refuses; rendered in the API's own error shape."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.kind = kind  # error type override, e.g. "not_found_error"


@dataclass(frozen=True, slots=True)
class SimRequest:
    """The parts of a generation request the simulator acts on."""

    api: str
    body: dict[str, JSON]
    model: str
    stream: bool
    include_usage: bool  # OpenAI stream_options.include_usage (Anthropic always reports)
    max_tokens: int | None
    min_tokens: int
    ignore_eos: bool


def parse_json(raw: bytes) -> dict[str, JSON]:
    if not raw.strip():
        raise RequestError("request body is empty; expected a JSON object")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestError(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError("request body must be a JSON object")
    return body


def _int_field(body: dict[str, JSON], name: str, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{name} must be an integer", param=name)
    if value < minimum:
        raise RequestError(f"{name} must be at least {minimum}, got {value}", param=name)
    return value


def _bool_field(body: dict[str, JSON], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be a boolean", param=name)
    return value


def _model(body: dict[str, JSON], default: str) -> str:
    model = body.get("model")
    if model is None:
        return default
    if not isinstance(model, str) or not model:
        raise RequestError("model must be a non-empty string", param="model")
    return model


def parse_chat(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/chat/completions``."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages: field required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty array", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _CHAT_ROLES:
            raise RequestError(
                f"messages[{i}] must be an object with a role in {sorted(_CHAT_ROLES)}",
                param=f"messages.[{i}].role",
            )
    n = _int_field(body, "n", 1)
    if n is not None and n != 1:
        raise RequestError("n > 1 is not supported by agentx serve-sim", param="n")
    max_tokens = _int_field(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _int_field(body, "max_tokens", 1)
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if max_tokens is not None and min_tokens > max_tokens:
        raise RequestError(
            f"min_tokens ({min_tokens}) must be <= max_tokens ({max_tokens})", param="min_tokens"
        )
    stream = _bool_field(body, "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestError("stream_options must be an object", param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    return SimRequest(
        api=API_OPENAI_CHAT,
        body=body,
        model=_model(body, default_model),
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=_bool_field(body, "ignore_eos"),
    )


def parse_messages(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/messages`` (Anthropic). ``max_tokens`` is required, as Anthropic requires it."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages: Field required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: must be a non-empty list", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ANTHROPIC_ROLES:
            raise RequestError(
                f"messages.{i}.role: Input should be 'user' or 'assistant'", param="messages"
            )
    max_tokens = _int_field(body, "max_tokens", 1)
    if max_tokens is None:
        raise RequestError("max_tokens: Field required", param="max_tokens")
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    return SimRequest(
        api=API_ANTHROPIC_MESSAGES,
        body=body,
        model=_model(body, default_model),
        stream=_bool_field(body, "stream"),
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min(min_tokens, max_tokens),
        ignore_eos=_bool_field(body, "ignore_eos"),
    )


def context_error(api: str, prompt_tokens: int, max_tokens: int | None, limit: int) -> None:
    """Raise the API's context-length error when the request cannot fit ``--max-model-len``."""
    wanted = prompt_tokens + (max_tokens or 0)
    if prompt_tokens < limit and wanted <= limit:
        return
    if api == API_ANTHROPIC_MESSAGES:
        raise RequestError(
            f"prompt is too long: {wanted} tokens > {limit} maximum", param="messages"
        )
    if max_tokens is None:
        message = (
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
        )
    else:
        message = (
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{wanted} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
            "completion). Please reduce the length of the messages or completion."
        )
    raise RequestError(message, param="messages", code="context_length_exceeded")
