"""Capture: the mitmproxy addon, SSE parsers, sessions/threads and the ``agentx capture`` runner.

The only part of agentx that imports mitmproxy (in :mod:`agentx.capture.addon` and
:mod:`agentx.capture.runner`, lazily); the parsers and the recorder are plain Python.
"""

from __future__ import annotations

from pathlib import Path

ADDON_PATH = Path(__file__).with_name("mitmdump_addon.py")

__all__ = ["ADDON_PATH"]
