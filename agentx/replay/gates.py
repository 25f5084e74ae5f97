"""Failure and coverage gates: when a run's figures cannot be trusted, it fails (exit 1).

- **Nothing measured**: every measured request failed, or none was measured (not stopped by a
  signal): always, whatever the options.
- **Failed requests** (``--max-failed-ratio F``): once ``max(concurrency, 10)`` measured
  requests have ended, a failed share above ``F`` aborts the run (in-flight requests are
  cancelled); the results are still written. agentx-harness's ``failed_request_threshold``.
- **Coverage** (``--min-coverage R``): with a ``--duration`` window of at least 15 minutes, the
  last first token and the last streamed answer's end of the measured requests must both come
  at least ``R x duration`` after the window's start, else the window was not covered by
  measured traffic. agentx-harness's ``minimum_profile_metric_coverage_ratio`` (it checks windows
  of 900 s or more only, and so does agentx).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentx.core.record import RequestRecord
from agentx.results.summary.run import GateReport

MIN_GATED = 10  # the failure gate looks at no fewer measured requests than this
COVERAGE_MIN_WINDOW_S = 900.0  # shorter windows are not coverage-gated (as the harness)


class FailedRatioGate:
    """The live failed-request gate of one process; :meth:`add` returns the reason to abort."""

    def __init__(self, max_ratio: float | None, after: int = MIN_GATED) -> None:
        self.max_ratio = max_ratio
        self.after = max(after, MIN_GATED)
        self.total = 0
        self.failed = 0
        self.tripped = False

    def add(self, ok: bool) -> str | None:
        self.total += 1
        self.failed += not ok
        if self.max_ratio is None or self.tripped or self.total < self.after:
            return None
        reason = failed_ratio_reason(self.failed, self.total, self.max_ratio)
        self.tripped = reason is not None
        return reason


def failed_ratio_reason(failed: int, total: int, max_ratio: float) -> str | None:
    if total == 0 or failed / total <= max_ratio:
        return None
    return (
        f"{failed} of {total} measured requests failed ({100 * failed / total:.1f} %), more "
        f"than --max-failed-ratio {max_ratio:g}"
    )


def coverage(records: Sequence[RequestRecord], window_start_ns: int, duration_s: float) -> float:
    """How far into the window measured traffic reached: the smaller of (last first token,
    last streamed answer's end) after the window's start, as a fraction of the window."""
    firsts = [r.sent_ns + r.ttft_ns for r in records if r.ttft_ns is not None]
    ends = [r.sent_ns + r.e2e_ns for r in records if r.e2e_ns is not None and r.itl_ns]
    if not firsts or not ends:
        return 0.0
    reach_ns = min(max(firsts), max(ends)) - window_start_ns
    return max(0.0, reach_ns / (duration_s * 1e9))


def evaluate(
    records: Sequence[RequestRecord],
    *,
    max_failed_ratio: float | None,
    min_coverage: float | None,
    duration_s: float | None,
    window_start_ns: int | None,
    aborted: str | None = None,
    interrupted: bool = False,
) -> GateReport:
    """The gates over a run's measured records (``aborted``: a reason found during the run).
    Whatever the options, a run fails when every measured request failed, or when none was
    measured and nothing stopped it: it measured nothing it claims."""
    measured = [r for r in records if not r.warmup]
    failed = sum(1 for r in measured if not r.ok)
    ratio = failed / len(measured) if measured else None
    reasons = [aborted] if aborted else []
    if measured and failed == len(measured) and not aborted:
        reasons.append(f"every measured request failed ({failed} of {len(measured)})")
    elif not any(r.in_window for r in measured) and not aborted and not interrupted:
        reasons.append(
            "no request was measured"
            + (
                f" inside the {duration_s:g} s --duration window (the warm-up took it: a longer "
                "--duration, or a shorter --warmup)"
                if duration_s is not None
                else ""
            )
        )
    elif max_failed_ratio is not None and not aborted:
        reason = failed_ratio_reason(failed, len(measured), max_failed_ratio)
        if reason is not None and len(measured) >= MIN_GATED:
            reasons.append(reason)
    cov: float | None = None
    if (
        min_coverage is not None
        and duration_s is not None
        and duration_s >= COVERAGE_MIN_WINDOW_S
        and window_start_ns is not None
    ):
        cov = coverage([r for r in measured if r.ok], window_start_ns, duration_s)
        if cov < min_coverage:
            reasons.append(
                f"measured requests covered {100 * cov:.1f} % of the {duration_s:g} s window, "
                f"less than --min-coverage {min_coverage:g}"
            )
    return GateReport(ratio, cov, tuple(reasons))
