"""serve-sim: an OpenAI/Anthropic/Gemini-compatible server that behaves like a serving engine
with a prefix cache (see docs/serve-sim.md).

In-process use::

    from agentx.serve_sim import SimConfig, SimServer, running_server

    with SimServer(SimConfig(port=0)) as srv:        # background thread
        ...  # srv.url == "http://127.0.0.1:PORT"

    async with running_server(SimConfig(port=0)) as srv:  # on the current event loop
        ...

The server half (aiohttp) is imported on first use, so ``agentx.serve_sim.config`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentx.serve_sim.config import SimConfig

if TYPE_CHECKING:
    from agentx.serve_sim.server import RunningServer, SimServer, create_app, running_server, serve

__all__ = ["RunningServer", "SimConfig", "SimServer", "create_app", "running_server", "serve"]

_SERVER_NAMES = frozenset(__all__) - {"SimConfig"}


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from agentx.serve_sim import server

        return getattr(server, name)
    raise AttributeError(f"module 'agentx.serve_sim' has no attribute {name!r}")
