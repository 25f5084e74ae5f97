"""``--tokenizer server``: the server counts its own tokens (vLLM's ``POST /tokenize``).

The same chat messages and tools a request carries are posted to ``/tokenize`` (vLLM's chat
form: ``messages``, ``tools``, ``add_generation_prompt``); the server applies its own tokenizer
and chat template and answers the token ids. Exact by construction, one HTTP call per request.
"""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np

from agentx.apis import Api
from agentx.core.errors import EndpointError
from agentx.core.models import JSON
from agentx.prefixcache.tokenizer.types import ToChat
from agentx.prefixcache.tokens import TokenArray

TIMEOUT_S = 120.0


def _root(url: str) -> str:
    return url.rstrip("/").removesuffix("/v1")


class ServerTokenizer:
    def __init__(self, url: str, *, model: str | None = None, to_chat: ToChat | None = None):
        self.url = _root(url)
        self._model = model
        self._to_chat = to_chat
        self._client = httpx.Client(timeout=TIMEOUT_S)

    @property
    def name(self) -> str:
        return f"server:{self.url}/tokenize"

    def _model_name(self) -> str:
        if self._model is None:
            try:
                resp = self._client.get(f"{self.url}/v1/models")
                resp.raise_for_status()
                self._model = str(resp.json()["data"][0]["id"])
            except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
                raise EndpointError(f"--tokenizer server: {self.url}/v1/models: {exc}") from None
        return self._model

    def _payload(self, api: str, body: JSON) -> dict[str, Any]:
        if api == Api.OPENAI_CHAT and isinstance(body, dict):
            messages, tools = body.get("messages"), body.get("tools")
        elif self._to_chat is not None:
            messages, tools = self._to_chat(api, body)
        else:
            raise ValueError(f"cannot tokenize a {api} request on the server")
        payload: dict[str, Any] = {
            "model": self._model_name(),
            "messages": messages,
            "add_generation_prompt": True,
        }
        if tools:
            payload["tools"] = tools
        return payload

    def request_tokens(self, api: str, body: JSON) -> TokenArray:
        payload = self._payload(api, body)
        try:
            resp = self._client.post(f"{self.url}/tokenize", json=payload)
        except httpx.HTTPError as exc:
            raise EndpointError(f"--tokenizer server: {self.url}/tokenize: {exc}") from None
        if resp.status_code != 200:
            raise EndpointError(
                f"--tokenizer server: {self.url}/tokenize answered HTTP {resp.status_code}: "
                f"{resp.text[:200]}"
            )
        return np.asarray(resp.json().get("tokens") or [], dtype=np.int64)

    def close(self) -> None:
        self._client.close()
