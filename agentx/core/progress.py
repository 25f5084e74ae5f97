"""Progress of long commands: a live bar on a terminal, quiet periodic lines otherwise.

Library code reports to a :class:`Progress` it is given (the base class ignores everything, so
library functions default to it); the CLI makes the real one with :func:`progress_for`::

    with progress_for("convert") as progress:
        progress.phase("importing", total=len(files), unit="files")
        for f in files:
            ...
            progress.advance()            # one unit of the phase's total
            progress.count("exchanges", n)  # a side counter, shown with its rate

Reporting is cheap (attribute updates, no I/O): a background thread draws. On a terminal that
is a rich bar with counts, rates and ETA, refreshed a few times a second; when stderr is not a
terminal (CI logs, pipes) one line every ``period_s`` seconds (default 10), nothing for a
command that finishes sooner, so a long command is never silent for minutes and a short one
prints nothing. ``AGENTX_PROGRESS=off|lines|bar`` overrides the choice.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Self

from agentx.core.lifecycle import Closing

if TYPE_CHECKING:
    from rich.table import Table

ENV = "AGENTX_PROGRESS"
DEFAULT_PERIOD_S = 10.0


class Progress(Closing):
    """A sink for progress reports that ignores them; subclasses draw.

    ``phase`` starts a stage of the work with an optional total (``None``: unknown) in
    ``unit``; ``advance`` moves it on; ``count`` adds to a named side counter (requests,
    tokens) that lives across phases.
    """

    def __init__(self) -> None:
        self.label = ""
        self.unit = ""
        self.total: float | None = None
        self.done: float = 0.0
        self.counts: dict[str, int] = {}
        self._phase_t0 = time.monotonic()
        self._t0 = self._phase_t0

    def phase(self, label: str | None, total: float | None = None, unit: str = "") -> None:
        """Start a stage of the work; ``label=None`` keeps the current label (what a data
        source does: it knows the total, the command knows what the work is called)."""
        if label is not None:
            self.label = label
        self.total, self.unit, self.done = total, unit, 0.0
        self._phase_t0 = time.monotonic()

    def set_total(self, total: float | None) -> None:
        self.total = total

    def advance(self, n: float = 1) -> None:
        self.done += n

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def close(self) -> None:
        """Stop drawing (idempotent)."""

    # -- what the renderers show ---------------------------------------------------------

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._t0

    def rate(self) -> float | None:
        """Units of the current phase per second, or ``None`` before there is one."""
        dt = time.monotonic() - self._phase_t0
        return self.done / dt if dt > 0.5 and self.done else None

    def eta_s(self) -> float | None:
        rate = self.rate()
        if self.total is None or not rate:
            return None
        return max(0.0, (self.total - self.done) / rate)

    def summary(self) -> str:
        """``"importing 312/700 files (45%), 21,345 exchanges (1,650/s), ETA 16 s"``."""
        parts = [self.label] if self.label else []
        parts.append(_amount(self.done, self.total, self.unit))
        dt = max(self.elapsed_s, 1e-9)
        for name, n in self.counts.items():
            parts.append(f"{n:,} {name} ({n / dt:,.0f}/s)")
        rate = self.rate()
        if rate is not None and self.unit:
            parts.append(f"{_scaled(rate, self.unit)}/s")
        eta = self.eta_s()
        if eta is not None:
            parts.append(f"ETA {_duration(eta)}")
        parts.append(f"{_duration(self.elapsed_s)} elapsed")
        return ", ".join(p for p in parts if p)


def _scaled(value: float, unit: str) -> str:
    if unit == "B":
        for factor, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if value >= factor:
                return f"{value / factor:,.1f} {name}"
        return f"{value:,.0f} B"
    return f"{value:,.0f} {unit}" if value >= 10 else f"{value:,.1f} {unit}"


def _amount(done: float, total: float | None, unit: str) -> str:
    if total is None:
        return _scaled(done, unit) if unit or done else ""  # a phase that counts nothing
    pct = f" ({done / total:.0%})" if total else ""
    if unit == "B":
        return f"{_scaled(done, unit)} of {_scaled(total, unit)}{pct}"
    return f"{done:,.0f}/{total:,.0f} {unit}{pct}"


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class _Drawn(Progress):
    """A progress drawn by a daemon thread every ``interval_s`` until :meth:`close`."""

    def __init__(self, interval_s: float) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agentx-progress", daemon=True)
        self._closed = False

    def start(self) -> Self:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.draw()

    def draw(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.finish()

    def finish(self) -> None:
        """Called once, after the thread stopped."""


class LineProgress(_Drawn):
    """One line every ``period_s`` seconds (``agentx <command>: ...``), and a last one at the end
    when at least one was printed: quiet in logs, never silent for long."""

    def __init__(self, command: str, stream: IO[str], period_s: float = DEFAULT_PERIOD_S) -> None:
        super().__init__(period_s)
        self.command = command
        self.stream = stream
        self.lines = 0

    def draw(self) -> None:
        try:
            self.stream.write(f"agentx {self.command}: {self.summary()}\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is not worth failing for
            return
        self.lines += 1

    def finish(self) -> None:
        if self.lines:
            self.draw()


class BarProgress(_Drawn):
    """A rich live bar on the terminal: label, bar, counts, rates, ETA; erased when done."""

    def __init__(self, command: str, console: object | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        super().__init__(0.25)
        self.command = command
        self.console = console if isinstance(console, Console) else Console(stderr=True)
        self._live = Live(self._render(), console=self.console, auto_refresh=False, transient=True)

    def start(self) -> Self:
        self._live.start()
        return super().start()

    def _render(self) -> Table:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        grid = Table.grid(padding=(0, 1))
        grid.add_row(
            f"[bold]{self.command}[/]",
            ProgressBar(total=self.total, completed=self.done, width=30),
            self.summary(),
        )
        return grid

    def draw(self) -> None:
        self._live.update(self._render(), refresh=True)

    def finish(self) -> None:
        self._live.stop()


def progress_for(
    command: str,
    *,
    console: object | None = None,
    stream: IO[str] | None = None,
    period_s: float | None = None,
) -> Progress:
    """The progress display of one command, already drawing: a bar when stderr is a terminal,
    periodic lines otherwise (``AGENTX_PROGRESS=off|lines|bar`` overrides). Use it as a
    context manager, or call ``close()``."""
    out = stream or sys.stderr
    mode = os.environ.get(ENV, "").strip().lower()
    if mode in ("off", "0", "no", "none"):
        return Progress()
    is_tty = getattr(out, "isatty", lambda: False)()
    if mode == "bar" or (mode != "lines" and is_tty):
        return BarProgress(command, console).start()
    return LineProgress(command, out, period_s or DEFAULT_PERIOD_S).start()


__all__ = ["BarProgress", "LineProgress", "Progress", "progress_for"]
