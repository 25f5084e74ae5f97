"""Per-family assembly of a model call: which API a request speaks, and what came back.

Each assembler takes the response either as SSE events (``event``, which says whether an
event carried generated output, for time to first token) or as one JSON body (``body``),
and builds the normalised :class:`~agentx.core.models.Response` and :class:`~agentx.core.models.Usage`.
Assemblers never raise on odd input: a malformed event is skipped, a missing field is ``None``.

One module per API family (:mod:`.anthropic`, :mod:`.openai_chat`, :mod:`.openai_responses`,
:mod:`.gemini`),
the shared result type and helpers in :mod:`.common`, and request routing in :mod:`.routing`.
"""

from __future__ import annotations

from agentx.apis.anthropic import AnthropicAssembler
from agentx.apis.assemble import Assembled, Assembler, error_text
from agentx.apis.gemini import GeminiAssembler, model_from_path
from agentx.apis.openai_chat import ChatAssembler
from agentx.apis.openai_responses import ResponsesAssembler
from agentx.capture.apis.routing import classify, make_assembler, max_output_tokens

__all__ = [
    "AnthropicAssembler",
    "Assembled",
    "Assembler",
    "ChatAssembler",
    "GeminiAssembler",
    "ResponsesAssembler",
    "classify",
    "error_text",
    "make_assembler",
    "max_output_tokens",
    "model_from_path",
]
