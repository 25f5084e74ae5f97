"""What serve-sim's request parsers share (one parser per family, in its module): the request
as the simulator acts on it (:class:`SimRequest`), what its path says (:class:`Route`), the
refusal in the family's own error shape (:class:`RequestError`), field checks, and the context
limit. Only what the simulation needs is checked; unknown fields are accepted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import orjson

from agentx.core.models import JSON


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


def int_field(body: dict[str, JSON], name: str, minimum: int, where: str = "") -> int | None:
    value = body.get(name)
    if value is None:
        return None
    param = where + name
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{param} must be an integer", param=param)
    if value < minimum:
        raise RequestError(f"{param} must be at least {minimum}, got {value}", param=param)
    return value


def bool_field(body: dict[str, JSON], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be a boolean", param=name)
    return value


def model_field(body: dict[str, JSON], default: str) -> str:
    model = body.get("model")
    if model is None:
        return default
    if not isinstance(model, str) or not model:
        raise RequestError("model must be a non-empty string", param="model")
    return model


@dataclass(frozen=True, slots=True)
class Route:
    """What a request's path and query say, for a family that puts the model or the streaming
    there (Gemini); the others' routes say nothing."""

    model: str | None = None  # the model the path names
    stream: bool | None = None  # streamed, as the path says (None: the body's ``stream``)
    sse: bool = True  # a stream is SSE (Gemini without ``?alt=sse``: a streamed JSON array)


def fixed_route(target: str, query: Mapping[str, str]) -> Route | None:
    """The route of a family served on one fixed path: it says nothing."""
    return Route()


def check_context(
    error: Callable[[int, int | None, int], RequestError],
    prompt_tokens: int,
    max_tokens: int | None,
    limit: int,
) -> None:
    """Raise the family's context-length ``error`` when the request cannot fit
    ``--max-model-len`` (``limit``): the prompt and the asked output, or no room for one
    output token."""
    wanted = prompt_tokens + (max_tokens or 0)
    if prompt_tokens < limit and wanted <= limit:
        return
    raise error(prompt_tokens, max_tokens, limit)
