"""The API families agentx speaks (OpenAI chat, OpenAI Responses, Anthropic Messages, Gemini):
usage blocks normalised (``usage``), provider-only fields (``provider_fields``), and any family
translated to OpenAI chat (``translate``)."""
