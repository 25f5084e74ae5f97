"""The bottleneck verdict: from client CPU, loop lateness, dispatch lag and server queueing."""

from __future__ import annotations

import asyncio
import time

from agentx.core.record import RequestRecord
from agentx.metrics.prometheus import ServerMetrics
from agentx.replay.bottleneck import LoopMonitor, Tick, judge, warning

MS = 1_000_000


def rec(scheduled_ns: int, sent_ns: int, ttft_ns: int) -> RequestRecord:
    return RequestRecord(
        request_id=f"r{sent_ns}",
        source_request_id="s",
        lane=0,
        session_id="sess",
        thread_id="main",
        turn=0,
        warmup=False,
        start_wall_ns=0,
        scheduled_ns=scheduled_ns,
        sent_ns=sent_ns,
        status=200,
        ok=True,
        ttft_ns=ttft_ns,
    )


def lagged(lag_ms: float, n: int = 40, ttft_ms: float = 20.0) -> list[RequestRecord]:
    return [
        rec(
            scheduled_ns=i * 1000 * MS,
            sent_ns=i * 1000 * MS + int(lag_ms * MS),
            ttft_ns=int(ttft_ms * MS),
        )
        for i in range(n)
    ]


def server_with_waiting(*waiting: float) -> ServerMetrics:
    return ServerMetrics(time_series=[{"t_ns": i, "waiting": w} for i, w in enumerate(waiting)])


IDLE = [Tick(0.001, 0.05, 0.0)] * 50
BUSY_AND_LATE = [*[Tick(0.3, 0.97, 0.02)] * 10, *IDLE]
STARVED = [*[Tick(0.3, 0.1, 0.8)] * 10, *IDLE]
BLOCKED = [*[Tick(0.3, 0.05, 0.0)] * 10, *IDLE]
RAN_AND_WAITED = [*[Tick(0.3, 0.50, 0.46)] * 10, *IDLE]  # runnable 96 % of the late time


def test_an_idle_client_is_never_named_even_with_late_sends() -> None:
    # requests left late, but the event loop kept time: the delay was not the client's
    v = judge(lagged(500), 2.0, IDLE, server_with_waiting(0, 3, 12, 9))
    assert v.bottleneck == "server"
    line = warning(v)
    assert line is not None and line.startswith("the server is the bottleneck, not the client")
    assert "up to 12 requests waited" in line and "2% of a core" in line


def test_a_client_whose_loop_ran_late_is_named_with_the_cause() -> None:
    assert judge(lagged(1), 95.0, IDLE, None).cause == "cpu"
    v = judge(lagged(200), 40.0, BUSY_AND_LATE, server_with_waiting(5, 5, 5))
    assert (v.bottleneck, v.cause) == ("client", "cpu")  # it delayed sends, busy: its own work
    assert v.loop_ran_when_late is not None and v.loop_ran_when_late > 0.9
    assert "add --workers" in (warning(v) or "")
    v = judge(lagged(200), 8.0, STARVED, None)
    assert (v.bottleneck, v.cause) == ("client", "starved")
    assert "other processes hold this machine's cores" in (warning(v) or "")
    v = judge(lagged(200), 3.0, BLOCKED, None)
    assert (v.bottleneck, v.cause) == ("client", "blocked")
    assert (warning(v) or "").startswith("the client delayed its own requests")


def test_a_loop_that_ran_or_waited_most_of_the_time_is_not_blocked() -> None:
    v = judge(lagged(200), 50.9, RAN_AND_WAITED, None)
    assert (v.bottleneck, v.cause) == ("client", "cpu")
    line = warning(v) or ""
    assert "it ran 50% of the time it was late (waited for a CPU 46%)" in line
    assert "in bursts" in line and "blocked" not in line and "saturated" not in line.lower()
    assert not v.cpu_saturated  # 51 % of a core is not saturated, whatever held the loop


def test_saturated_only_near_a_whole_core() -> None:
    v = judge(lagged(200), 95.0, BUSY_AND_LATE, None)
    assert v.cpu_saturated and "it was CPU-saturated" in (warning(v) or "")
    for cpu in (7.5, 50.9, 89.9):
        assert not judge(lagged(200), cpu, BUSY_AND_LATE, None).cpu_saturated


def test_ttft_growth_names_the_server() -> None:
    records = lagged(1, n=40, ttft_ms=30.0)
    records[-10:] = lagged(1, n=10, ttft_ms=900.0)
    for i, r in enumerate(records):  # send order = list order
        object.__setattr__(r, "sent_ns", i * MS)
    v = judge(records, 10.0, IDLE, None)
    assert v.bottleneck == "server" and "TTFT p50 went from 30.0 ms to 900.0 ms" in (
        warning(v) or ""
    )


def test_nothing_to_say_when_both_kept_up() -> None:
    v = judge(lagged(2), 20.0, IDLE, server_with_waiting(0, 0, 0, 0, 0, 0, 1))
    assert v.bottleneck == "none" and warning(v) is None
    assert set(v.to_json()) >= {"bottleneck", "client_cpu_percent_max", "dispatch_lag_p99_ms"}


def test_the_loop_monitor_sees_a_blocked_loop() -> None:
    async def main() -> list[Tick]:
        monitor = LoopMonitor()
        task = asyncio.create_task(monitor.run())
        await asyncio.sleep(0.15)
        t = time.perf_counter()
        while time.perf_counter() - t < 0.25:  # hog the loop
            pass
        await asyncio.sleep(0.15)
        task.cancel()
        return monitor.ticks

    ticks = asyncio.run(main())
    assert max(t.late_s for t in ticks) > 0.1
    assert max(t.ran + t.waited for t in ticks) > 0.5  # running, or waiting for a CPU
