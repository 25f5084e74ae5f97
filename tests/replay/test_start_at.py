"""--start-at: parsing (epoch seconds, ISO 8601) and the barrier itself."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentx.core.errors import UsageError
from agentx.replay.options import ReplayOptions, parse_start_at
from agentx.replay.setup import start_barrier


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("1767225600", 1767225600.0),
        ("1767225600.25", 1767225600.25),
        ("2026-01-01T00:00:00Z", 1767225600.0),
        ("2026-01-01T00:00:00", 1767225600.0),  # no offset: UTC, whatever the machine's zone
        ("2026-01-01T02:00:00+02:00", 1767225600.0),
        (" 2026-01-01 00:00:00.5+00:00 ", 1767225600.5),
    ],
)
def test_parse(text: str, epoch: float) -> None:
    assert parse_start_at(text) == epoch


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("tomorrow", "epoch seconds or an ISO 8601"),
        ("", "epoch seconds or an ISO 8601"),
        ("2026-13-01T00:00:00Z", "epoch seconds or an ISO 8601"),
        ("+120", "not an absolute time"),  # relative: every shard would compute its own instant
        ("120", "not an absolute time"),
    ],
)
def test_parse_refuses(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_start_at(text)


def options(start_at_s: float | None) -> ReplayOptions:
    return ReplayOptions.of(trace=Path("t"), endpoint="http://127.0.0.1:1", start_at_s=start_at_s)


async def test_waits_until_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    target = time.time() + 0.4
    assert await start_barrier(options(target)) is None
    assert time.time() >= target
    assert "waiting" in capsys.readouterr().err


async def test_a_past_time_starts_at_once_with_a_warning() -> None:
    t0 = time.monotonic()
    warning = await start_barrier(options(time.time() - 30))
    assert time.monotonic() - t0 < 0.5
    assert warning is not None and "had passed" in warning and "started at once" in warning


async def test_no_barrier() -> None:
    assert await start_barrier(options(None)) is None


def test_the_option_is_in_the_summary_config() -> None:
    assert options(1767225600.0).config()["start_at_s"] == 1767225600.0
