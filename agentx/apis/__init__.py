"""The API families agentx speaks (OpenAI chat, OpenAI Responses, Anthropic Messages, Gemini):
their names (:class:`Api`, :data:`MODEL_APIS`), what a body holds (``bodies``), usage blocks
normalised (``usage``), provider-only fields (``provider_fields``), and any family translated to
OpenAI chat (``translate``)."""

from agentx.apis.names import MODEL_APIS, Api

__all__ = ["MODEL_APIS", "Api"]
