"""mitmproxy embedded in-process: the agentx addon on its own thread and event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentx.capture.addon import CaptureAddon
from agentx.capture.runner.config import (
    CaptureConfig,
    is_loopback,
    listen_port,
    resolve_upstream,
)
from agentx.core.errors import CaptureError


class ProxyThread:
    """An embedded mitmproxy with the agentx addon, on its own thread and event loop."""

    def __init__(self, config: CaptureConfig, addon: CaptureAddon, confdir: Path) -> None:
        self.config = config
        self.addon = addon
        self.confdir = confdir
        self.port: int | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._master: Any = None
        self._error: BaseException | None = None

    def _mode(self) -> str:
        if self.config.mode == "reverse":
            parts = urlsplit(resolve_upstream(self.config.upstream))
            return f"reverse:{parts.scheme}://{parts.netloc}"
        return "regular"

    def start(self, timeout: float = 30.0) -> None:
        self._thread = threading.Thread(target=self._main, name="agentx-proxy", daemon=True)
        # mitmproxy writes its CA files as it starts: never group/world-writable, whatever the
        # umask (its private keys are 0600 already)
        umask = os.umask(0o022)
        os.umask(umask | 0o022)
        try:
            self._thread.start()
            ready = self._ready.wait(timeout)
        finally:
            os.umask(umask)
        if not ready:
            raise CaptureError("the capture proxy did not start within 30 s")
        if self._error is not None:
            raise CaptureError(f"the capture proxy could not start: {self._error}")

    def _main(self) -> None:
        try:
            asyncio.run(self._amain())
        except BaseException as exc:  # SystemExit from a mitmproxy addon included
            self._error = self._error or exc
        finally:
            self._ready.set()

    async def _amain(self) -> None:
        from mitmproxy import addons as mitm_addons
        from mitmproxy import options as mitm_options
        from mitmproxy.master import Master

        cfg = self.config
        opts = mitm_options.Options()
        master = Master(opts)
        master.addons.add(*mitm_addons.default_addons())  # type: ignore[no-untyped-call]
        master.addons.add(_LoopGuard(self))  # type: ignore[no-untyped-call]
        master.addons.add(self.addon)  # type: ignore[no-untyped-call]
        master.addons.add(_Ready(self))  # type: ignore[no-untyped-call]
        opts.update(  # type: ignore[no-untyped-call]
            confdir=str(self.confdir),
            listen_host=cfg.listen_host,
            listen_port=listen_port(cfg),
            mode=[self._mode()],
            ssl_insecure=cfg.upstream_insecure,
            connection_strategy="lazy",
        )
        self._master = master
        asyncio.get_running_loop().set_exception_handler(_quiet_cancellation)
        await master.run()

    def _on_running(self) -> None:
        ps = self._master.addons.get("proxyserver") if self._master else None
        addrs = ps.listen_addrs() if ps is not None else []
        if not addrs:
            self._error = RuntimeError("no listening socket (is the port in use?)")
            self._master.shutdown()
        else:
            self.port = int(addrs[0][1])
        self._ready.set()

    def stop(self, timeout: float = 30.0) -> None:
        if self._master is not None and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # its loop may have closed meanwhile
                self._master.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)


class _Ready:
    def __init__(self, proxy: ProxyThread) -> None:
        self.proxy = proxy

    def running(self) -> None:
        self.proxy._on_running()


LOOP_STATUS = 508  # Loop Detected


class _LoopGuard:
    """A request whose target is the proxy itself would come back to it forever (forward mode:
    ``curl -x P http://P/``; reverse mode: ``--upstream`` pointing at the proxy): answered
    with 508 instead of being sent."""

    def __init__(self, proxy: ProxyThread) -> None:
        self.proxy = proxy
        self.local = _local_names(proxy.config.listen_host)

    def requestheaders(self, flow: Any) -> None:
        from mitmproxy import http

        req = flow.request
        host = str(req.host).lower().strip("[]")
        if req.port == self.proxy.port and (host in self.local or is_loopback(host)):
            flow.response = http.Response.make(
                LOOP_STATUS,
                b"agentx capture: refused a request addressed to the capture proxy itself "
                b"(it would loop through it)\n",
                {"content-type": "text/plain"},
            )


def _local_names(listen_host: str) -> set[str]:
    """Names and addresses of this machine (where a request would reach the proxy)."""
    names = {"localhost", "0.0.0.0", "::", listen_host.lower().strip("[]")}
    try:
        hostname = socket.gethostname()
        names.update({hostname.lower(), socket.getfqdn().lower()})
        names.update(str(info[4][0]) for info in socket.getaddrinfo(hostname, None))
    except OSError:
        pass
    return names


def _quiet_cancellation(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler around mitmproxy's own: a client handler cancelled at shutdown
    is no error. CPython 3.12.0 and 3.12.1's ``asyncio.start_server`` call ``task.exception()`` on
    a cancelled handler task and log the ``CancelledError`` as a traceback at every stop (fixed in
    3.12.2); anything else goes to asyncio's default handler."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)
