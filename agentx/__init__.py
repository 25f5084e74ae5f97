"""agentx: capture coding-agent LLM traffic and replay it as load against inference servers."""

__version__ = "0.1.0"
