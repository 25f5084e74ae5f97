"""``agentx capture``: mitmproxy embedded in-process (private confdir) in front of an agent.

The proxy runs on its own thread with its own event loop (:mod:`.proxy`); the recorder on
another; the main thread launches the agent (:mod:`.agent`), draws the status line and handles
signals (:mod:`.run`). :mod:`.capture` ties proxy, recorder and trace together; :mod:`.config`
holds the options.
"""

from __future__ import annotations

from agentx.capture import ADDON_PATH
from agentx.capture.runner.agent import AgentProcess, agent_env, combined_bundle, system_ca_file
from agentx.capture.runner.capture import Capture
from agentx.capture.runner.config import (
    DEFAULT_PORT,
    UPSTREAMS,
    CaptureConfig,
    Mode,
    default_confdir,
    listen_port,
    resolve_upstream,
)
from agentx.capture.runner.proxy import ProxyThread
from agentx.capture.runner.run import CaptureResult, run_capture

__all__ = [
    "ADDON_PATH",
    "DEFAULT_PORT",
    "UPSTREAMS",
    "AgentProcess",
    "Capture",
    "CaptureConfig",
    "CaptureResult",
    "Mode",
    "ProxyThread",
    "agent_env",
    "combined_bundle",
    "default_confdir",
    "listen_port",
    "resolve_upstream",
    "run_capture",
    "system_ca_file",
]
