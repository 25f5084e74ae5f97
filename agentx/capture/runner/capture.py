"""Proxy + recorder + trace as one object, with mitmproxy's warnings routed to the user."""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from agentx.capture.addon import CaptureAddon
from agentx.capture.recorder import CaptureStats, Recorder
from agentx.capture.runner.config import (
    CaptureConfig,
    Mode,
    capture_mode,
    default_confdir,
    listen_port,
    resolve_upstream,
)
from agentx.capture.runner.proxy import ProxyThread
from agentx.core.errors import AgentxError, CaptureError, UsageError
from agentx.core.outputs import check_output
from agentx.core.urls import redact_url
from agentx.store import TraceWriter

_LOGGERS = ("mitmproxy", "agentx.capture")


class _ForwardLog(logging.Handler):
    """mitmproxy's and agentx's warnings, to a callback (and kept, for start-up errors)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink
        self.errors: list[str] = []
        self.starting = True  # start-up errors become the CaptureError, not extra lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if record.levelno >= logging.ERROR:
                self.errors.append(msg)
            if not self.starting:
                self.sink(msg)
        except Exception:
            pass


class Capture:
    """Proxy + recorder + trace, as one object: ``with Capture(cfg) as cap: ... cap.url``.

    Used by :func:`~agentx.capture.runner.run_capture`, the tests and the benchmark.
    """

    def __init__(
        self, config: CaptureConfig, *, report: Callable[[str], None] | None = None
    ) -> None:
        self.config = config
        self.report = report or (lambda msg: print(msg, file=sys.stderr))
        # Forward mode signs certificates with agentx's own CA, kept in ~/.config/agentx/mitmproxy
        # (or --confdir). Reverse mode needs no CA (mitmproxy makes one all the same): a
        # temporary directory (made by start, removed on close): nothing is left in the home.
        self._tmp_confdir: Path | None = None
        self._own_confdir = not config.confdir and config.mode != "forward"
        self.confdir = Path(config.confdir) if config.confdir else default_confdir()
        self.recorder: Recorder | None = None
        self.proxy: ProxyThread | None = None
        self._log: _ForwardLog | None = None
        self._stats: CaptureStats | None = None

    @property
    def url(self) -> str:
        assert self.proxy is not None and self.proxy.port is not None
        host = self.config.listen_host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.proxy.port}"

    def start(self) -> Capture:
        cfg = self.config
        mode = capture_mode(cfg.mode)  # a caller may give the plain string
        if mode is Mode.FORWARD and cfg.upstream:
            raise UsageError(
                "--upstream is for --mode reverse; in forward mode the agent picks its host"
            )
        if mode is Mode.REVERSE:
            resolve_upstream(cfg.upstream)
        if self._own_confdir:
            self._tmp_confdir = self.confdir = Path(tempfile.mkdtemp(prefix="agentx-mitmproxy-"))
        try:
            self.confdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise CaptureError(f"cannot create {self.confdir}: {exc.strerror or exc}") from None
        check_output(cfg.out, force=cfg.force)  # a directory, or a trace the user already has
        try:
            writer = TraceWriter(
                cfg.out,
                metadata={"capture": cfg.mode, "upstream": redact_url(cfg.upstream or "")},
            )
        except AgentxError as exc:
            self.close()  # the temporary confdir
            raise CaptureError(str(exc)) from None
        self.recorder = Recorder(writer, keep_non_model=cfg.keep_non_model, reporter=self.report)
        self.recorder.start()
        self._log = _ForwardLog(self.report)
        for name in _LOGGERS:
            logging.getLogger(name).addHandler(self._log)
        self.proxy = ProxyThread(
            cfg, CaptureAddon(self.recorder, identity=cfg.identity), self.confdir
        )
        try:
            self.proxy.start()
        except CaptureError as exc:
            errors = self._log.errors
            self.close()
            where = f"{cfg.listen_host}:{listen_port(cfg)}"
            if any("address already in use" in e.lower() for e in errors):
                raise CaptureError(
                    f"the capture proxy could not start: {where} is already in use (choose another --port)"
                ) from None
            if errors:
                first = errors[-1].splitlines()[0]
                raise CaptureError(
                    f"the capture proxy could not start on {where}: {first}"
                ) from None
            raise exc from None
        self._log.starting = False
        return self

    def close(self) -> CaptureStats:
        if self._stats is not None:
            return self._stats
        if self.proxy is not None:
            self.proxy.stop()
        stats = self.recorder.close() if self.recorder is not None else CaptureStats()
        if self._log is not None:
            for name in _LOGGERS:
                logging.getLogger(name).removeHandler(self._log)
        if self._tmp_confdir is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._tmp_confdir)
        self._stats = stats
        return stats

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
