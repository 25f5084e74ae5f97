"""The command line: parse, call one library function, render. Nothing else lives here.

One module per group of commands; importing them registers the commands, in pipeline order.
"""

# isort: skip_file
from agentx.cli.app import app, main
from agentx.cli import capture, clean, traces, dataset, replay, sweep, report, baseline, serve, demo  # noqa: F401  (registers)

__all__ = ["app", "main"]
