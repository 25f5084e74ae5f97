"""agentx: capture coding-agent LLM traffic and replay it as load against inference servers."""

__version__ = "0.1.0"  # the one home of the version (pyproject reads it)
DISTRIBUTION = "agentx-replay"  # the name on PyPI; the command is `agentx`
