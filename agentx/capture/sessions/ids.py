"""Ids: new ones for requests, threads and sessions, and the session id an agent itself sent."""

from __future__ import annotations

import re
import uuid

import orjson

from agentx.capture.agents import session_header
from agentx.core.models import JSON

_SESSION_IN_USER_ID = re.compile(r"session_([0-9A-Za-z-]{8,})")


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:16]}"


def session_hint(headers: dict[str, str], body: JSON) -> str | None:
    """The session id the agent itself sent, if any (headers lower-cased)."""
    if (v := session_header(headers)) is not None:
        return v
    if isinstance(body, dict):
        meta = body.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("user_id"), str):
            uid = meta["user_id"]
            m = _SESSION_IN_USER_ID.search(uid)
            if m:
                return m.group(1)
            try:
                parsed = orjson.loads(uid)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str):
                return str(parsed["session_id"])[:200]
        if isinstance(body.get("prompt_cache_key"), str) and body["prompt_cache_key"]:
            return str(body["prompt_cache_key"])[:200]
    return None
