"""Response bodies and streamed chunks, one module per API family: ``chat`` (OpenAI chat
completions), ``messages`` (Anthropic), ``responses`` (OpenAI Responses), ``gemini`` (Gemini
generateContent); ``base`` holds what they share (:class:`Emitter`, :class:`UsageCounts`),
``errors`` the error bodies."""

from agentx.serve_sim.emitters.base import Emitter, UsageCounts
from agentx.serve_sim.emitters.chat import OpenAIChatEmitter, openai_usage
from agentx.serve_sim.emitters.errors import anthropic_error, gemini_error, openai_error
from agentx.serve_sim.emitters.gemini import GeminiEmitter, gemini_usage
from agentx.serve_sim.emitters.messages import AnthropicEmitter, anthropic_usage
from agentx.serve_sim.emitters.responses import ResponsesEmitter, responses_usage

__all__ = [
    "AnthropicEmitter",
    "Emitter",
    "GeminiEmitter",
    "OpenAIChatEmitter",
    "ResponsesEmitter",
    "UsageCounts",
    "anthropic_error",
    "anthropic_usage",
    "gemini_error",
    "gemini_usage",
    "openai_error",
    "openai_usage",
    "responses_usage",
]
