"""The tokenizer protocol and the chat converter type (imported by every tokenizer module)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agentx.core.models import JSON
from agentx.prefixcache.tokens import TokenArray

# any API family's body -> (OpenAI chat messages, chat tools): agentx.apis.translate.to_chat
ToChat = Callable[[str, JSON], tuple[list[dict[str, Any]], list[dict[str, Any]]]]


class Tokenizer(Protocol):
    """Counts a request's prompt tokens the way one server would."""

    @property
    def name(self) -> str:
        """What produced the counts: ``cl100k_base``, ``hf:PATH`` or ``server:URL``."""
        ...

    def request_tokens(self, api: str, body: JSON) -> TokenArray:
        """Token ids of the whole prompt of one request body."""
        ...
