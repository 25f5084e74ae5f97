"""The agentx error family.

Library code raises these; the CLI turns each into one line on stderr and an exit code.
Per-request failures during replay are *data* (a row's ``error``), never exceptions.
"""

from __future__ import annotations


class AgentxError(Exception):
    """Base of every error agentx raises on purpose. ``exit_code`` is what the CLI returns."""

    exit_code = 1


class UsageError(AgentxError):
    """The command line or options make no sense together (exit 2)."""

    exit_code = 2


class TraceError(AgentxError):
    """A trace is missing, truncated, not Parquet, or of an unknown format version."""


class FormatError(AgentxError):
    """An imported file (Weka, Mooncake, JSONL) is malformed; names the file and the record."""

    def __init__(self, path: str, message: str, record: int | None = None) -> None:
        where = f"{path}" if record is None else f"{path}: record {record}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.message = message
        self.record = record

    def __reduce__(self) -> tuple[type[FormatError], tuple[str, str, int | None]]:
        # picklable as it was built (an import worker process raises it to its parent)
        return (FormatError, (self.path, self.message, self.record))


class ShapeError(AgentxError, ValueError):
    """A result file (``summary.json``, ``sweep.json``, ...) holds a field of the wrong type."""


class EndpointError(AgentxError):
    """The endpoint cannot be reached or does not speak the expected API at start-up."""


class CaptureError(AgentxError):
    """The capture proxy could not start or could not write its trace."""


class SloFailed(AgentxError):
    """The run completed but at least one ``--slo`` check failed (exit 3)."""

    exit_code = 3


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM) that stops a command where it is: exit 128 + the signal. Like
    KeyboardInterrupt it is not an ``Exception``, so no library's ``except Exception`` swallows
    or rewords it on its way to the CLI."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum
        self.exit_code = 128 + signum
