"""Error bodies in each API family's shape."""

from __future__ import annotations

from agentx.core.models import JSON

_OPENAI_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
}


def openai_error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> dict[str, JSON]:
    kind = _OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def anthropic_error(status: int, message: str, kind: str | None = None) -> dict[str, JSON]:
    kind = kind or _ANTHROPIC_TYPES.get(
        status, "invalid_request_error" if status < 500 else "api_error"
    )
    return {"type": "error", "error": {"type": kind, "message": message}}


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def gemini_error(status: int, message: str) -> dict[str, JSON]:
    """Google's error body: ``{"error": {"code", "message", "status"}}``."""
    name = _GEMINI_STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}
