"""Which side held the run back: the client, the server, or neither — decided from measurements.

Measured on the client, per process: the CPU time of the event-loop thread over the run, and a
*loop monitor* (:class:`LoopMonitor`) that wakes every :data:`TICK_S` and records how late it
woke and, in between, the share of time the thread ran on a CPU and the share it was runnable
but waited for one (Linux ``schedstat``; elsewhere only CPU time is known). Per request: the
dispatch lag (scheduled send -> sent). From the server: requests waiting in its queue
(``num_requests_waiting`` in ``/metrics``) and TTFT over the run.

A late event loop is always the client's own delay — a server cannot make it late — so:

- **client** when a process used nearly a whole core (``>= 90 %``), or when requests left late
  (dispatch lag p99 ``>= 50 ms``) *and* the loop itself woke late (p99 ``>= 25 ms``). The cause
  is named from the late ticks: ``blocked`` when it neither ran nor waited for a CPU most of
  that time (synchronous I/O, another thread holding the GIL); else ``starved`` when it waited
  for a CPU at least as long as it ran (other processes hold the machine's cores); else ``cpu``
  (it ran most of the runnable time: its own work). The client is called CPU-saturated only when
  its busiest process used ``>= 90 %`` of a core (``Bottleneck.cpu_saturated``);
- **server** otherwise, when the server queued requests (waiting ``> 0`` in at least a fifth of
  the scrapes) or TTFT rose over the run (the last quarter's median ``>= 3x`` the first's and
  ``+100 ms``);
- **none** else. A client whose loop kept time is never named, however late its requests were.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agentx.core.percentiles import percentiles
from agentx.core.record import RequestRecord
from agentx.metrics.prometheus import ServerMetrics
from agentx.results.summary.run import SATURATED_CPU_PERCENT, Bottleneck

TICK_S = 0.1
SATURATED_LAG_P99_MS = 50.0
LOOP_LATE_P99_MS = 25.0
LATE_TICK_S = 0.02  # a tick that woke this late counts as the loop being behind
RAN_WHEN_LATE = 0.7  # running share of the late ticks that makes the cause the client's own work
RUNNABLE_WHEN_LATE = 0.5  # ran + waited below this share of the late ticks: blocked
SERVER_WAITING_SHARE = 0.2  # share of scrapes with requests waiting at the server
TTFT_GROWTH = 3.0
TTFT_GROWTH_MIN_MS = 100.0
SCHEDSTAT = "/proc/thread-self/schedstat"  # ns on a CPU, ns waiting for one, timeslices


@dataclass(frozen=True, slots=True)
class Tick:
    late_s: float  # how late the monitor woke
    ran: float  # share of the time since the previous tick the thread ran on a CPU (0..1)
    waited: float  # ... was runnable but waited for a CPU (0 where that is not known)


def _clock() -> tuple[float, float]:
    """(seconds this thread ran, seconds it waited for a CPU): schedstat, else CPU time."""
    try:
        with open(SCHEDSTAT) as f:
            ran, waited = f.read().split()[:2]
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return time.thread_time(), 0.0


class LoopMonitor:
    """Samples the event loop's lateness and what its thread did; run it as a task."""

    def __init__(self) -> None:
        self.ticks: list[Tick] = []

    async def run(self) -> None:
        wall = time.perf_counter()
        ran, waited = _clock()
        while True:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            now_ran, now_waited = _clock()
            elapsed = max(now - wall, 1e-9)
            self.ticks.append(
                Tick(
                    max(0.0, elapsed - TICK_S),
                    min(1.0, max(0.0, (now_ran - ran) / elapsed)),
                    min(1.0, max(0.0, (now_waited - waited) / elapsed)),
                )
            )
            wall, ran, waited = now, now_ran, now_waited


def warning(v: Bottleneck) -> str | None:
    """One line naming the bottleneck, with the figures that decided it."""
    client = (
        f"busiest client process at {v.client_cpu_percent_max:.0f}% of a core, "
        f"dispatch lag p99 {_ms(v.dispatch_lag_p99_ms)}, "
        f"event loop late by {_ms(v.loop_late_p99_ms)} (p99)"
    )
    if v.bottleneck == "client":
        ran, waited = v.loop_ran_when_late or 0.0, v.loop_waited_when_late or 0.0
        why = {
            "cpu": (
                "it was CPU-saturated: add --workers or lower --concurrency"
                if v.cpu_saturated
                else f"it ran {ran:.0%} of the time it was late (waited for a CPU "
                f"{waited:.0%}): its own work, in bursts; add --workers or lower --concurrency"
            ),
            "starved": f"it waited for a CPU {waited:.0%} of the time it was late (and ran "
            f"{ran:.0%}): other processes hold this machine's cores",
            "blocked": f"it was off the CPU most of the time it was late (ran {ran:.0%}, "
            f"waited for a CPU {waited:.0%}): blocked in I/O or by another thread",
        }.get(v.cause or "", "its event loop fell behind")
        return f"the client delayed its own requests ({client}): {why}"
    if v.bottleneck == "server":
        reasons = []
        if v.server_waiting_max:
            reasons.append(
                f"up to {v.server_waiting_max:.0f} requests waited in its queue "
                f"({v.server_waiting_share:.0%} of scrapes)"
            )
        if v.cause == "ttft":
            reasons.append(
                f"TTFT p50 went from {_ms(v.ttft_p50_first_ms)} to "
                f"{_ms(v.ttft_p50_last_ms)} over the run"
            )
        return f"the server is the bottleneck, not the client ({client}): {'; '.join(reasons)}"
    return None


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} ms" if v < 1000 else f"{v / 1000:.2f} s"


def _waiting(server: ServerMetrics | None) -> tuple[float | None, float | None]:
    if server is None:
        return None, None
    values = [p["waiting"] for p in server.time_series if p.get("waiting") is not None]
    if not values:
        return None, None
    return max(values), sum(1 for v in values if v > 0) / len(values)


def _ttft_quarters(records: Sequence[RequestRecord]) -> tuple[float | None, float | None]:
    ttfts = [r.ttft_ns / 1e6 for r in sorted(records, key=lambda r: r.sent_ns) if r.ttft_ns]
    q = len(ttfts) // 4
    if q < 5:
        return None, None
    return percentiles(ttfts[:q]).p50, percentiles(ttfts[-q:]).p50


def _client_cause(cpu_percent_max: float, ran: float | None, waited: float | None) -> str:
    if cpu_percent_max >= SATURATED_CPU_PERCENT or ran is None or waited is None:
        return "cpu"
    if ran >= RAN_WHEN_LATE:
        return "cpu"
    if ran + waited < RUNNABLE_WHEN_LATE:
        return "blocked"
    return "starved" if waited >= ran else "cpu"


def judge(
    records: Sequence[RequestRecord],
    cpu_percent_max: float,
    ticks: Sequence[Tick],
    server: ServerMetrics | None,
) -> Bottleneck:
    """Name the bottleneck of a run from what was measured (see the module docstring)."""
    measured = [r for r in records if not r.warmup]
    lag_p99 = percentiles([r.dispatch_lag_ns / 1e6 for r in measured]).p99
    late = [t for t in ticks if t.late_s >= LATE_TICK_S]
    late_p99 = percentiles([t.late_s * 1000 for t in ticks]).p99 if ticks else None
    ran = sum(t.ran for t in late) / len(late) if late else None
    waited = sum(t.waited for t in late) / len(late) if late else None
    waiting_max, waiting_share = _waiting(server)
    first, last = _ttft_quarters([r for r in measured if r.ok])
    lagging = lag_p99 is not None and lag_p99 >= SATURATED_LAG_P99_MS
    loop_late = late_p99 is not None and late_p99 >= LOOP_LATE_P99_MS
    queued = waiting_share is not None and waiting_share >= SERVER_WAITING_SHARE
    slower = (
        first is not None
        and last is not None
        and last >= TTFT_GROWTH * first
        and last - first >= TTFT_GROWTH_MIN_MS
    )
    verdict, cause = "none", None
    if cpu_percent_max >= SATURATED_CPU_PERCENT or (lagging and loop_late):
        verdict, cause = "client", _client_cause(cpu_percent_max, ran, waited)
    elif queued or slower:
        verdict, cause = "server", "queue" if queued else "ttft"
    return Bottleneck(
        verdict,
        cause,
        round(cpu_percent_max, 1),
        lag_p99,
        late_p99,
        ran,
        waited,
        waiting_max,
        waiting_share,
        first,
        last,
    )
