"""The API families agentx speaks (OpenAI chat, OpenAI Responses, Anthropic Messages, Gemini).

One module per family holds everything about it (:mod:`.openai_chat`, :mod:`.openai_responses`,
:mod:`.anthropic`, :mod:`.gemini`), ending in its :class:`Family`; :mod:`.registry` maps each
:class:`Api` to its family. The shared bases: :mod:`.names` (the names), :mod:`.bodies` (what a
body holds), :mod:`.usage` and :mod:`.usage_counts` (usage blocks normalised), :mod:`.sse` and
:mod:`.assemble` (capture), :mod:`.stream` (replay's parsers), :mod:`.chat_parts` and
:mod:`.translate` (any family to OpenAI chat), :mod:`.serving`, :mod:`.answer` and
:mod:`.emit` (serve-sim), :mod:`.provider_fields` (provider-only fields).
"""

from agentx.apis.family import Family
from agentx.apis.names import MODEL_APIS, Api
from agentx.apis.registry import FAMILIES, classify, family

__all__ = ["FAMILIES", "MODEL_APIS", "Api", "Family", "classify", "family"]
