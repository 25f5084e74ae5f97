"""The API family names: what a trace's ``api`` column, ``requests.parquet`` and every JSON
output hold. The values are the strings stored since trace format v1; never change one."""

from __future__ import annotations

from enum import StrEnum


class Api(StrEnum):
    """An API family. Rows of other traffic (count_tokens, model lists, telemetry) are
    :attr:`OTHER`."""

    OPENAI_CHAT = "openai.chat"
    OPENAI_RESPONSES = "openai.responses"
    ANTHROPIC_MESSAGES = "anthropic.messages"
    GEMINI = "gemini.generate_content"  # :generateContent and :streamGenerateContent
    OTHER = "other"


# The families of model calls, in the order the registry lists them.
MODEL_APIS = (Api.OPENAI_CHAT, Api.OPENAI_RESPONSES, Api.ANTHROPIC_MESSAGES, Api.GEMINI)
