"""Validation of incoming requests, one parser per API family (OpenAI chat and Responses,
Anthropic messages, Gemini generateContent), with the errors its server would answer. Only what
the simulation needs is checked; unknown fields are accepted."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from agentx.apis import Api
from agentx.core.models import JSON

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_ANTHROPIC_ROLES = frozenset({"user", "assistant"})
_GEMINI_ROLES = frozenset({"user", "model", "function"})


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
    include_usage: bool  # OpenAI chat stream_options.include_usage (the others always report)
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


def _int_field(body: dict[str, JSON], name: str, minimum: int, where: str = "") -> int | None:
    value = body.get(name)
    if value is None:
        return None
    param = where + name
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{param} must be an integer", param=param)
    if value < minimum:
        raise RequestError(f"{param} must be at least {minimum}, got {value}", param=param)
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
        api=Api.OPENAI_CHAT,
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
        api=Api.ANTHROPIC_MESSAGES,
        body=body,
        model=_model(body, default_model),
        stream=_bool_field(body, "stream"),
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min(min_tokens, max_tokens),
        ignore_eos=_bool_field(body, "ignore_eos"),
    )


def parse_responses(body: dict[str, JSON], default_model: str) -> SimRequest:
    """``POST /v1/responses`` (OpenAI Responses). The whole conversation must be in ``input``:
    serve-sim stores no responses, so ``previous_response_id`` is refused (as vLLM refuses an id
    it does not hold) rather than answered with a prompt it cannot count."""
    items = body.get("input")
    if items is None:
        raise RequestError("input: field required", param="input")
    if isinstance(items, str):
        if not items:
            raise RequestError("input must not be empty", param="input")
    elif not isinstance(items, list) or not items:
        raise RequestError("input must be a string or a non-empty array", param="input")
    elif not all(isinstance(item, dict) for item in items):
        raise RequestError("input items must be objects", param="input")
    if body.get("previous_response_id") is not None:
        raise RequestError(
            "previous_response_id is not supported by agentx serve-sim (it stores no "
            "responses): send the whole conversation in input",
            param="previous_response_id",
        )
    max_tokens = _int_field(body, "max_output_tokens", 1)
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if max_tokens is not None and min_tokens > max_tokens:
        raise RequestError(
            f"min_tokens ({min_tokens}) must be <= max_output_tokens ({max_tokens})",
            param="min_tokens",
        )
    return SimRequest(
        api=Api.OPENAI_RESPONSES,
        body=body,
        model=_model(body, default_model),
        stream=_bool_field(body, "stream"),
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=_bool_field(body, "ignore_eos"),
    )


def parse_gemini(body: dict[str, JSON], model: str, stream: bool) -> SimRequest:
    """``POST /v1beta/models/{model}:generateContent`` (``stream`` False) and
    ``:streamGenerateContent`` (True): the model and the streaming come from the path. Top-level
    ``ignore_eos``/``min_tokens`` are honoured, as on the other routes (Google refuses them)."""
    contents = body.get("contents")
    if contents is None:
        raise RequestError("* GenerateContentRequest.contents: contents is not specified")
    if not isinstance(contents, list) or not contents:
        raise RequestError("* GenerateContentRequest.contents: must be a non-empty list")
    for i, content in enumerate(contents):
        role = content.get("role") if isinstance(content, dict) else None
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise RequestError(f"* GenerateContentRequest.contents[{i}].parts: must be a list")
        if role is not None and role not in _GEMINI_ROLES:
            raise RequestError(
                f"* GenerateContentRequest.contents[{i}].role: must be 'user' or 'model'"
            )
    config = body.get("generationConfig")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise RequestError("* GenerateContentRequest.generation_config: must be an object")
    where = "generationConfig."
    candidates = _int_field(config, "candidateCount", 1, where)
    if candidates is not None and candidates != 1:
        raise RequestError(
            "candidateCount > 1 is not supported by agentx serve-sim",
            param=where + "candidateCount",
        )
    max_tokens = _int_field(config, "maxOutputTokens", 1, where)
    min_tokens = _int_field(body, "min_tokens", 0) or 0  # serve-sim's extras, as on the others
    return SimRequest(
        api=Api.GEMINI,
        body=body,
        model=model,
        stream=stream,
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min_tokens if max_tokens is None else min(min_tokens, max_tokens),
        ignore_eos=_bool_field(body, "ignore_eos"),
    )


def context_error(api: str, prompt_tokens: int, max_tokens: int | None, limit: int) -> None:
    """Raise the API's context-length error when the request cannot fit ``--max-model-len``."""
    wanted = prompt_tokens + (max_tokens or 0)
    if prompt_tokens < limit and wanted <= limit:
        return
    if api == Api.ANTHROPIC_MESSAGES:
        raise RequestError(
            f"prompt is too long: {wanted} tokens > {limit} maximum", param="messages"
        )
    if api == Api.GEMINI:
        asked = f"The input token count ({prompt_tokens})"
        if prompt_tokens < limit:
            asked += f" plus maxOutputTokens ({max_tokens})"
        raise RequestError(f"{asked} exceeds the maximum number of tokens allowed ({limit}).")
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
    param = "input" if api == Api.OPENAI_RESPONSES else "messages"
    raise RequestError(message, param=param, code="context_length_exceeded")
