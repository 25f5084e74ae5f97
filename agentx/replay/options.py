"""``ReplayOptions``: every ``agentx replay`` option as one frozen value (see docs/replay.md)."""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from agentx.core.errors import UsageError
from agentx.core.urls import check_http_url, redact_url
from agentx.metrics.cost import CostOptions
from agentx.schedule import SPAWN_JOIN_RULES, SpawnJoin
from agentx.schedule.arrivals import ArrivalError, Arrivals
from agentx.workload.rules import ScheduleRules
from agentx.workload.scenario import scenario_values

Assistant = Literal["recorded", "live"]
ApiMode = Literal["chat", "messages", "native"]

DEFAULT_TIMEOUT_S = 600.0
MAX_SECONDS = 1e9  # ~31 years: any duration, think cap or timeout beyond is a typo
MAX_TIME_SCALE = 1e6  # x recorded think times (inf would overflow the schedule)


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """What to replay, against what, and how. Defaults are the CLI's defaults.

    ``api_key`` is never printed (``repr=False``) nor written (:meth:`config` leaves it out);
    when ``None`` the ``OPENAI_API_KEY`` environment variable is used. URLs are written
    redacted (:func:`agentx.core.urls.redact_url`); a query string of ``endpoint`` is sent with
    every request (gateways that take their key there).
    """

    trace: Path
    endpoint: str
    model: str | None = None  # None: the endpoint's first model from /v1/models
    concurrency: int = 1  # session lanes
    duration_s: float | None = None  # stop sending after this long, then drain
    max_requests: int | None = None  # measured (non-warmup) requests to send
    sessions: int | None = None  # sample this many sessions (with seed)
    time_scale: float = 1.0  # multiplies recorded think time; 0 = back to back
    max_think_s: float | None = None  # cap on one (scaled) think time
    assistant: Assistant = "recorded"
    salt: bool = True  # a cache-bust marker per tree instance
    warmup: int = 0  # requests per lane sent back to back (one-token answers), not measured
    start_ratio: tuple[float, float] = (0.0, 0.0)  # where in its span a lane's first tree starts
    burst: bool = False  # primers at once, every lane's first measured request at once
    spawn_join: SpawnJoin = "recorded"  # or "harness": agentx-harness's subagent timing
    trace_idle_cap_s: float | None = None  # a tree idle longer than this: its timers pulled in
    system_idle_cap_s: float | None = None  # the same when nothing at all is in flight
    max_failed_ratio: float | None = None  # more failed measured requests: the run fails
    min_coverage: float | None = None  # measured traffic must reach this share of --duration
    scenario: str | None = None  # the preset the options came from (agentx.workload.scenario)
    api: ApiMode = "chat"
    extra_body: dict[str, Any] = field(default_factory=dict)
    ignore_eos: bool | None = None  # None: on for servers known to honour it (vLLM, SGLang)
    metrics_url: str | None = None  # None: <endpoint>/metrics when it answers
    scrape_metrics: bool = True
    slo: str | None = None
    workers: int | Literal["auto"] = 1  # "auto": agentx.replay.autoworkers decides
    shard: tuple[int, int] = (0, 1)  # (index, count): this process runs sessions i % count == index
    start_at_s: float | None = None  # --start-at: epoch seconds the lanes start at (a barrier)
    seed: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    block_size: int | None = None  # theoretical-hit block size; None: the server's, else 16
    tokenizer: str | None = None  # theoretical figures' tokens: None cl100k_base, server, HF path
    api_key: str | None = field(default=None, repr=False)
    output_dir: Path | None = None
    force: bool = False  # replace the results already in output_dir
    progress: bool = True  # live display (the CLI turns it off for --json or a non-TTY)
    percentiles: tuple[float, ...] = ()  # --percentiles beyond p50/p90/p99
    cost: CostOptions | None = None  # --gpu-hour-cost, --price, ...: summary.json's cost
    reset_cache: bool = False  # ask the server to drop its prefix cache before the run
    # open loop (agentx.replay.open_loop): sessions or requests arriving per second, whole run
    session_rate: float | None = None
    request_rate: float | None = None
    arrival: str = "poisson"  # poisson | gamma | constant (agentx.schedule.arrivals)
    burstiness: float = 1.0  # gamma shape, as vLLM's --burstiness

    @property
    def n_workers(self) -> int:
        """The client processes (``--workers auto`` is resolved before the run starts)."""
        if self.workers == "auto":
            raise UsageError("--workers auto must be resolved before the run (run_replay does)")
        return self.workers

    @property
    def open_loop(self) -> bool:
        return self.session_rate is not None or self.request_rate is not None

    def arrivals(self) -> Arrivals | None:
        """The whole run's arrival process (None: closed-loop lanes)."""
        rate = self.session_rate if self.session_rate is not None else self.request_rate
        if rate is None:
            return None
        try:
            return Arrivals(rate, self.arrival, self.burstiness, self.seed)
        except ArrivalError as exc:
            raise UsageError(str(exc)) from None

    def __post_init__(self) -> None:
        validate(self)

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def config(self) -> dict[str, Any]:
        """The options as JSON-able data for ``summary.json``: never the API key."""
        data = asdict(self)
        data.pop("api_key", None)
        data["endpoint"] = redact_url(self.endpoint)
        data["metrics_url"] = redact_url(self.metrics_url) if self.metrics_url else None
        data["trace"] = str(self.trace)
        data["output_dir"] = str(self.output_dir) if self.output_dir else None
        data["shard"] = f"{self.shard[0]}/{self.shard[1]}"
        data["percentiles"] = list(self.percentiles)
        data["start_ratio"] = format_ratio(self.start_ratio)
        return data


def validate(o: ReplayOptions) -> None:
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise UsageError(message)

    def seconds(value: float | None, flag: str) -> None:
        need(
            value is None or (math.isfinite(value) and value <= MAX_SECONDS),
            f"{flag} must be a finite number of seconds up to {MAX_SECONDS:.0e}, got {value}",
        )

    need(o.concurrency >= 1, "--concurrency must be at least 1")
    seconds(o.duration_s, "--duration")
    seconds(o.max_think_s, "--max-think")
    seconds(o.timeout_s, "--timeout")
    seconds(o.trace_idle_cap_s, "--trace-idle-cap")
    seconds(o.system_idle_cap_s, "--system-idle-cap")
    need(
        math.isfinite(o.time_scale) and o.time_scale <= MAX_TIME_SCALE,
        f"--time-scale must be a finite factor up to {MAX_TIME_SCALE:.0e}, got {o.time_scale}",
    )
    need(o.duration_s is None or o.duration_s > 0, "--duration must be positive")
    need(o.max_requests is None or o.max_requests >= 1, "--max-requests must be at least 1")
    need(o.sessions is None or o.sessions >= 1, "--sessions must be at least 1")
    need(o.time_scale >= 0, "--time-scale must be >= 0")
    need(o.max_think_s is None or o.max_think_s >= 0, "--max-think must be >= 0")
    need(o.assistant in ("recorded", "live"), "--assistant must be recorded or live")
    need(o.api in ("chat", "messages", "native"), "--api must be chat, messages or native")
    need(o.warmup >= 0, "--warmup must be >= 0")
    lo, hi = o.start_ratio
    need(0.0 <= lo <= hi <= 1.0, "--start-ratio must be MIN:MAX with 0 <= MIN <= MAX <= 1")
    need(o.spawn_join in SPAWN_JOIN_RULES, "--spawn-join must be recorded or harness")
    need(o.trace_idle_cap_s is None or o.trace_idle_cap_s >= 0, "--trace-idle-cap must be >= 0")
    need(o.system_idle_cap_s is None or o.system_idle_cap_s >= 0, "--system-idle-cap must be >= 0")
    need(
        o.max_failed_ratio is None or 0.0 <= o.max_failed_ratio <= 1.0,
        "--max-failed-ratio must be between 0 and 1",
    )
    need(o.min_coverage is None or 0.0 <= o.min_coverage <= 1.0, "--min-coverage must be 0..1")
    need(o.workers == "auto" or o.workers >= 1, "--workers must be at least 1 (or auto)")
    need(
        o.workers == "auto" or o.workers <= o.concurrency,
        "--workers cannot exceed --concurrency (lanes are split)",
    )
    need(
        o.session_rate is None or o.request_rate is None,
        "--session-rate and --request-rate are exclusive (sessions or single requests arrive)",
    )
    need(
        o.open_loop or (o.arrival == "poisson" and o.burstiness == 1.0),
        "--arrival and --burstiness shape open-loop arrivals: add --session-rate or --request-rate",
    )
    if o.open_loop:
        o.arrivals()  # checks the rate, the process and its burstiness
    need(
        o.request_rate is None or o.assistant == "recorded",
        "--request-rate sends every request alone: --assistant live needs the previous answer",
    )
    need(
        not o.open_loop or (o.warmup == 0 and o.start_ratio == (0.0, 0.0)),
        "open loop (--session-rate, --request-rate) starts each session from its first request: "
        "not with --warmup, --start-ratio or a --scenario that sets them",
    )
    index, count = o.shard
    need(count >= 1 and 0 <= index < count, "--shard must be I/N with 0 <= I < N")
    need(o.timeout_s > 0, "--timeout must be positive")
    need(o.block_size is None or o.block_size >= 1, "--block-size must be at least 1")
    need(
        o.assistant == "recorded" or o.api == "chat",
        "--assistant live threads the server's replies as chat messages: use it with --api chat",
    )
    for flag, url in (("--endpoint", o.endpoint), ("--metrics-url", o.metrics_url)):
        if url is not None:
            check_http_url(url, flag)
            need(
                "@" not in urlsplit(url).netloc,
                f"{flag} {redact_url(url)!r}: credentials in a URL (user:pass@) are not sent; "
                "pass the key with --api-key (or OPENAI_API_KEY)",
            )


def parse_ratio(text: str) -> tuple[float, float]:
    """``"0.25:0.75"`` -> ``(0.25, 0.75)``; one number ``R`` means ``R:R``."""
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        raise UsageError(
            f"--start-ratio must look like MIN:MAX (e.g. 0.25:0.75), got {text!r}"
        ) from None
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or not 0.0 <= parts[0] <= parts[1] <= 1.0:
        raise UsageError(f"--start-ratio {text}: need 0 <= MIN <= MAX <= 1")
    return parts[0], parts[1]


def format_ratio(ratio: tuple[float, float]) -> str:
    return f"{ratio[0]:g}:{ratio[1]:g}"


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)``."""
    try:
        left, right = text.split("/")
        index, count = int(left), int(right)
    except ValueError:
        raise UsageError(f"--shard must look like I/N (e.g. 0/4), got {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text}: need 0 <= I < N")
    return index, count


def parse_start_at(text: str) -> float:
    """``--start-at``: epoch seconds (``1767225600``, ``1767225600.5``) or an ISO 8601 time
    (``2026-01-01T00:00:00Z``, ``...+02:00``; without an offset, UTC) -> epoch seconds."""
    t = text.strip()
    try:
        epoch = float(t)
    except ValueError:
        pass
    else:
        if epoch < 1e9:  # before 2001: a relative time, which each shard would read differently
            raise UsageError(
                f"--start-at {text} is not an absolute time: give epoch seconds "
                "(e.g. $(( $(date +%s) + 120 ))) or an ISO 8601 time"
            )
        return epoch
    try:
        when = datetime.fromisoformat(t)
    except ValueError:
        raise UsageError(
            f"--start-at must be epoch seconds or an ISO 8601 time "
            f"(e.g. 2026-01-01T12:00:00Z), got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """``--extra-body '{"temperature": 0}'`` -> dict (merged into every request body)."""
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--extra-body must be a JSON object")
    return value


def rules_of(o: ReplayOptions) -> ScheduleRules:
    """A replay's rules."""
    return ScheduleRules.of({f.name: getattr(o, f.name) for f in fields(ScheduleRules)})


def scenario_options(scenario: str | None, **explicit: Any) -> ReplayOptions:
    """``ReplayOptions`` from a preset and the options given explicitly (see
    :func:`scenario_values`)."""
    return ReplayOptions(**scenario_values(scenario, **explicit))


def describe(o: ReplayOptions) -> str:
    """The effective schedule settings, one line (printed at the start of a scenario run)."""
    parts = [
        f"duration {o.duration_s:g} s" if o.duration_s is not None else "no duration",
        f"concurrency {o.concurrency}",
        f"start ratio {format_ratio(o.start_ratio)}",
        f"warm-up primers{' (burst)' if o.burst else ''} + {o.warmup} requests/lane",
        f"trace idle cap {_seconds(o.trace_idle_cap_s)}",
        f"system idle cap {_seconds(o.system_idle_cap_s)}",
        f"max failed ratio {_value(o.max_failed_ratio)}",
        f"min coverage {_value(o.min_coverage)}",
        f"spawn/join {o.spawn_join}",
        f"seed {o.seed}",
        f"timeout {o.timeout_s:g} s",
        f"ignore_eos {'auto' if o.ignore_eos is None else 'on' if o.ignore_eos else 'off'}",
        f"marker {'on' if o.salt else 'off'}",
    ]
    head = f"scenario {o.scenario}" if o.scenario else "schedule"
    return f"{head}: " + ", ".join(parts)


def _seconds(v: float | None) -> str:
    return "none" if v is None else f"{v:g} s"


def _value(v: float | None) -> str:
    return "none" if v is None else f"{v:g}"
