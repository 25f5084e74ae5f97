"""A function run in a fresh interpreter without multiprocessing: it gets its arguments and the
links (done, counter, answer), the parent reads the count and the answer, and no third process
(multiprocessing's resource tracker) starts beside the child."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from agentx.replay.spawned import Counter, Link, Spawned


def _count_until_done(
    out: str, done: Callable[[], bool], count: Counter, answer: Connection
) -> None:
    """A child: count to 3 at once, then wait for the parent to be done, then answer."""
    for _ in range(3):
        count.value += 1
    while not done():
        time.sleep(0.01)
    Path(out).write_text(f"{os.getppid()}")
    answer.send(("done", count.value))


def _children() -> set[int]:
    me = str(os.getpid())
    kids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            kids.add(int(stat.parent.name))
    return kids


def test_a_spawned_child_gets_its_links_and_no_tracker_starts(tmp_path: Path) -> None:
    before = _children()
    out = tmp_path / "out"
    child = Spawned(
        __name__, "_count_until_done", (str(out), Link.DONE, Link.COUNTER, Link.ANSWER), answer=True
    )
    assert child.answer is not None
    deadline = time.monotonic() + 60
    while child.count < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.count == 3 and child.is_alive()  # waits for the parent to be done
    assert _children() - before == {child.pid}  # the child alone: no resource tracker
    child.set_done()
    assert child.answer.poll(60)
    assert child.answer.recv() == ("done", 3)
    child.join(60)
    assert child.exitcode == 0
    assert out.read_text() == str(os.getpid())
    child.answer.close()


def _deaf(count: Counter) -> None:
    """A child that does not answer SIGTERM."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    count.value = 1
    time.sleep(600)


def test_a_deaf_child_is_killed_within_the_bounded_wait() -> None:
    child = Spawned(__name__, "_deaf", (Link.COUNTER,))
    deadline = time.monotonic() + 60
    while child.count < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    child.end(0.5, terminate=True)
    assert not child.is_alive() and child.exitcode == -signal.SIGKILL


def _wait_done(done: Callable[[], bool]) -> None:
    while not done():
        time.sleep(0.01)


def _count_one(count: Counter) -> None:
    count.value = 1


def _wait_for(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 60
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


def test_a_deferred_child_starts_when_the_brief_one_ended() -> None:
    brief = Spawned(__name__, "_wait_done", (Link.DONE,), brief=True)
    deferred = Spawned(__name__, "_count_one", (Link.COUNTER,), deferred=True)
    never = Spawned(__name__, "_count_one", (Link.COUNTER,), deferred=True)
    time.sleep(0.3)
    assert deferred.pid is None and deferred.is_alive() and deferred.exitcode is None
    never.end(1.0)  # ended before it started: it never will
    assert not never.is_alive() and never.pid is None
    brief.set_done()
    assert _wait_for(lambda: deferred.count == 1)
    deferred.join(60)
    assert deferred.exitcode == 0 and brief.exitcode == 0
    time.sleep(0.2)
    assert never.pid is None and never.count == 0
