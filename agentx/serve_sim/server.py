"""Running serve-sim: blocking (the command), on the caller's loop, or on a thread (tests).

* ``serve(config, on_ready)`` blocks until SIGINT/SIGTERM (the ``agentx serve-sim`` command);
* ``async with running_server(config) as srv:`` on the caller's event loop (``srv.url``);
* ``with SimServer(config) as srv:`` on a background thread with its own loop, for
  synchronous code and tests (``srv.url``).

Port 0 picks a free port; the chosen one is in ``url``/``port``. The application itself
(handlers, timing headers) is :mod:`agentx.serve_sim.app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Self

from aiohttp import web

from agentx.core.errors import AgentxError
from agentx.core.lifecycle import Running
from agentx.serve_sim.app import create_app, guard_of, replica_of, replicas_of, warm_up
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.replica import Replica

__all__ = ["RunningServer", "SimServer", "create_app", "running_server", "serve"]


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A listening server: ``url`` is its base URL (``http://127.0.0.1:PORT``)."""

    url: str
    port: int
    replica: Replica  # read it only from the server's own event loop
    replicas: tuple[Replica, ...] = ()  # every replica (--replicas), the first is ``replica``

    def replica_url(self, index: int) -> str:
        """Replica ``index``'s own base URL (with --replicas N > 1; else the server's)."""
        return f"{self.url}/replicas/{index}" if len(self.replicas) > 1 else self.url


@contextlib.asynccontextmanager
async def running_server(config: SimConfig | None = None) -> AsyncIterator[RunningServer]:
    """Serve on the running event loop for the ``async with`` block (port 0 by default)."""
    config = (config or SimConfig(port=0)).validate()
    app = create_app(config)
    await warm_up(app)
    runner = web.AppRunner(
        app,
        access_log=None,
        handler_cancellation=True,
        shutdown_timeout=1.0,
        lingering_time=LINGER_S,
    )
    await runner.setup()
    protocol, guard = runner.server, guard_of(app)
    assert protocol is not None  # set up
    loop = asyncio.get_running_loop()
    try:
        # aiohttp's protocol behind the guard's limits (a site would hand it out bare)
        listener = await loop.create_server(
            lambda: guard.protocol(protocol()), config.host, config.port, backlog=BACKLOG
        )
    except OSError as exc:
        await runner.cleanup()
        raise AgentxError(
            f"serve-sim cannot listen on {config.host}:{config.port}: {exc.strerror or exc}"
        ) from None
    previous = loop.get_exception_handler()
    loop.set_exception_handler(guard.exception_handler)
    port = int(listener.sockets[0].getsockname()[1])
    host = config.host if ":" not in config.host else f"[{config.host}]"
    try:
        yield RunningServer(f"http://{host}:{port}", port, replica_of(app), replicas_of(app))
    finally:
        listener.close()
        loop.set_exception_handler(previous)
        await runner.cleanup()


BACKLOG = 128  # aiohttp's sites' own
LINGER_S = 1.0  # the rest of an unread body (a 408's trickle) is read this long, then closed


def serve(config: SimConfig, on_ready: Callable[[str], None]) -> None:
    """Run until SIGINT or SIGTERM; ``on_ready(url)`` is called once listening."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        async with running_server(config) as srv:
            on_ready(srv.url)
            await stop.wait()

    asyncio.run(main())


class SimServer(Running):
    """serve-sim on a background thread with its own event loop.

    ``with SimServer(SimConfig.of(port=0, kv_tokens=4096)) as srv: httpx.get(srv.url + "/health")``
    """

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = (config or SimConfig(port=0)).validate()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._server: RunningServer | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise AgentxError("SimServer is not running")
        return self._server.url

    @property
    def port(self) -> int:
        if self._server is None:
            raise AgentxError("SimServer is not running")
        return self._server.port

    def replica_url(self, index: int) -> str:
        if self._server is None:
            raise AgentxError("SimServer is not running")
        return self._server.replica_url(index)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            async with running_server(self.config) as srv:
                self._server = srv
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._ready.set()

    def start(self, timeout_s: float = 30.0) -> Self:
        if self._thread is not None:
            raise AgentxError("SimServer already started")

        def run() -> None:
            with contextlib.suppress(BaseException):
                asyncio.run(self._main())

        self._thread = threading.Thread(target=run, name="agentx-serve-sim", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise AgentxError("serve-sim did not start in time")
        if self._error is not None:
            raise (
                self._error
                if isinstance(self._error, AgentxError)
                else AgentxError(str(self._error))
            )
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout_s)
        self._thread = None
        self._server = None
