"""``mitmdump -s <this file>``: the agentx capture addon for a mitmproxy you run yourself.

    mitmdump -s "$(agentx capture --print-addon-path)" --mode reverse:https://api.anthropic.com \\
        --set agentx_out=trace.parquet

Options: ``agentx_out`` (trace path), ``agentx_keep_non_model`` (bool), ``agentx_identity`` (bool).
The trace is finalised when mitmdump exits (Ctrl-C).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from agentx.capture.addon import CaptureAddon
except ImportError:  # a mitmdump outside agentx's environment: try the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from agentx.capture.addon import CaptureAddon

addons = [CaptureAddon()]
