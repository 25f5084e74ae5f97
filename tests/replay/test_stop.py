"""StopSignals: a signal during the set-up's event loop ends it as Interrupted, never as a
traceback from the callback it happened to land in (the CI flake of stop 18)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from agentx.core.errors import Interrupted
from agentx.replay.stop import StopSignals


def test_a_signal_inside_a_loop_callback_cancels_the_setup(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = StopSignals()

    async def probe() -> str:
        loop = asyncio.get_running_loop()
        loop.call_soon(stop.handle, signal.SIGTERM, None)  # lands inside a callback
        await asyncio.sleep(30)
        return "answered"

    with pytest.raises(Interrupted) as err:
        stop.run(probe())
    assert err.value.signum == signal.SIGTERM
    assert stop.exit_code == 143
    assert "Exception in callback" not in caplog.text


def test_a_signal_before_the_setup_does_not_start_it() -> None:
    stop = StopSignals()
    with pytest.raises(Interrupted):
        stop.handle(signal.SIGINT, None)  # no loop yet: raises at once, as before
    started = []

    async def probe() -> None:
        started.append(True)

    with pytest.raises(Interrupted):
        stop.run(probe())
    assert started == []


def test_without_a_signal_the_setup_returns_its_value() -> None:
    async def probe() -> int:
        await asyncio.sleep(0)
        return 7

    assert StopSignals().run(probe()) == 7
