"""The event loop the lanes run on: uvloop where it is installed (Linux, macOS), else asyncio's.

uvloop makes each socket read and each callback cheaper; ``scripts/bench_client.py`` measures
the lanes' client on both (figures in docs/benchmarks.md). ``AGENTX_LOOP=asyncio`` forces the
standard loop (to compare, or to rule uvloop out when chasing a bug).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any

LOOP_ENV = "AGENTX_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or ``None`` for asyncio's default loop."""
    if os.environ.get(LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    return "uvloop" if loop_factory() is not None else "asyncio"


def run[T](main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the lanes' loop."""
    return asyncio.run(main, loop_factory=loop_factory())
