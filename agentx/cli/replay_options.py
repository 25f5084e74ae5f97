"""The options `agentx replay` and `agentx sweep` share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from agentx.cli.app import BUNDLED_HELP, err, trace_path
from agentx.cli.report_options import cost_from_flags
from agentx.core.errors import UsageError

Trace = Annotated[
    Path,
    typer.Argument(
        help="trace to replay: agentx Parquet, Weka JSON (file or dir) or Mooncake JSONL"
        + BUNDLED_HELP,
        callback=trace_path,
    ),
]
Endpoint = Annotated[
    str, typer.Option("--endpoint", help="server base URL, e.g. http://127.0.0.1:8000 or .../v1")
]
Model = Annotated[
    str | None, typer.Option("--model", help="model name [default: the endpoint's first model]")
]
Concurrency = Annotated[
    int, typer.Option("--concurrency", min=1, help="concurrent session lanes (recycled)")
]
OpenLoopConcurrency = Annotated[  # replay's: also the open-loop cap
    int | None,
    typer.Option(
        "--concurrency",
        min=1,
        help="concurrent session lanes (recycled) [default: 1]; with --session-rate or "
        "--request-rate, the cap on concurrent sessions or requests [default: 1000]",
        show_default=False,
    ),
]
Duration = Annotated[
    float | None,
    typer.Option("--duration", help="stop new requests after SECONDS, drain in-flight ones"),
]
MaxRequests = Annotated[
    int | None, typer.Option("--max-requests", min=1, help="stop after N measured requests")
]
Sessions = Annotated[
    int | None,
    typer.Option("--sessions", min=1, help="sample N sessions of the trace (with --seed)"),
]
TimeScale = Annotated[
    float,
    typer.Option("--time-scale", min=0.0, help="multiply recorded think time (0 = back to back)"),
]
MaxThink = Annotated[
    float | None, typer.Option("--max-think", min=0.0, help="cap one think time, SECONDS")
]
Assistant = Annotated[
    str,
    typer.Option(
        "--assistant",
        metavar="recorded|live",
        help="recorded (captured assistant turns) or live (the server's own replies)",
    ),
]
Salt = Annotated[
    bool | None,
    typer.Option(
        "--salt/--no-salt",
        help="cache-bust marker per tree (a session and its subagents) in the first user message "
        "[default: salt]",
        show_default=False,
    ),
]
Warmup = Annotated[
    int | None,
    typer.Option(
        "--warmup",
        min=0,
        help="requests per lane sent back to back with 1-token answers before measuring "
        "[default: 0]",
        show_default=False,
    ),
]
Api = Annotated[
    str,
    typer.Option(
        "--api",
        metavar="chat|messages|native",
        help="chat (convert to OpenAI chat), messages (Anthropic /v1/messages) or native",
    ),
]
ExtraBody = Annotated[
    str | None, typer.Option("--extra-body", help="JSON object merged into every request body")
]
IgnoreEos = Annotated[
    bool | None,
    typer.Option(
        "--ignore-eos/--no-ignore-eos",
        help="pin output lengths with ignore_eos/min_tokens [default: on for vLLM, SGLang, serve-sim]",
        show_default=False,
    ),
]
NoMetrics = Annotated[
    bool, typer.Option("--no-metrics", help="do not scrape the server's Prometheus metrics")
]
Seed = Annotated[
    int | None,
    typer.Option(
        "--seed",
        help="seed of --sessions sampling and of --start-ratio instants [default: 0]",
        show_default=False,
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0.001,
        help="per-request timeout, SECONDS [default: 600]",
        show_default=False,
    ),
]
BlockSize = Annotated[
    int | None,
    typer.Option(
        "--block-size",
        min=1,
        help="block size of the theoretical hit rate [default: the server's, else 16]",
        show_default=False,
    ),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="OPENAI_API_KEY",
        show_envvar=True,
        help="API key; never printed or written",
        show_default=False,
    ),
]
ResetCache = Annotated[
    bool,
    typer.Option(
        "--reset-cache/--no-reset-cache",
        help="reset the server's prefix cache before the run (vLLM, SGLang, serve-sim)",
    ),
]

# -- the schedule's rules (agentx-harness's, docs/replay.md); None = not given (a preset fills it)
Scenario = Annotated[
    str | None,
    typer.Option(
        "--scenario",
        help="agentx or agentx-mvp: agentx-harness's presets (explicit flags win)",
        show_default=False,
    ),
]
StartRatio = Annotated[
    str | None,
    typer.Option(
        "--start-ratio",
        help="MIN:MAX: each lane's first session starts at a sampled point of its recorded span "
        "[default: 0:0, its first request]",
        show_default=False,
    ),
]
Burst = Annotated[
    bool,
    typer.Option(
        "--burst", help="warm-up primers at once, and every lane's first measured request at once"
    ),
]
SpawnJoin = Annotated[
    str | None,
    typer.Option(
        "--spawn-join",
        help="recorded (think time measured from the join) or harness (agentx-harness's timing)",
        show_default=False,
    ),
]
TraceIdleCap = Annotated[
    float | None,
    typer.Option(
        "--trace-idle-cap",
        min=0.0,
        help="a session with nothing in flight waits at most SECONDS for its next request",
        show_default=False,
    ),
]
SystemIdleCap = Annotated[
    float | None,
    typer.Option(
        "--system-idle-cap",
        min=0.0,
        help="with nothing in flight anywhere, the next request comes within SECONDS",
        show_default=False,
    ),
]
MaxFailedRatio = Annotated[
    float | None,
    typer.Option(
        "--max-failed-ratio",
        min=0.0,
        max=1.0,
        help="fail the run (exit 1) when more than this share of measured requests failed",
        show_default=False,
    ),
]
MinCoverage = Annotated[
    float | None,
    typer.Option(
        "--min-coverage",
        min=0.0,
        max=1.0,
        help="fail the run (exit 1) when measured traffic covers less of a >= 900 s --duration",
        show_default=False,
    ),
]

SessionRate = Annotated[
    float | None,
    typer.Option(
        "--session-rate",
        metavar="R",
        help="open loop: new sessions arrive at R per second (--arrival); --concurrency caps "
        "concurrent sessions [default cap: 1000]",
        show_default=False,
    ),
]
RequestRate = Annotated[
    float | None,
    typer.Option(
        "--request-rate",
        metavar="R",
        help="open loop: every request arrives alone, R per second, in recorded order (traces "
        "without session structure, e.g. Mooncake); --concurrency caps concurrent requests",
        show_default=False,
    ),
]
Arrival = Annotated[
    str,
    typer.Option(
        "--arrival",
        metavar="poisson|gamma|constant",
        help="open-loop arrival process (seeded by --seed)",
    ),
]
Burstiness = Annotated[
    float,
    typer.Option(
        "--burstiness",
        help="gamma arrivals' shape (as vLLM's): < 1 burstier than Poisson, > 1 steadier",
    ),
]
Workers = Annotated[
    str,
    typer.Option(
        "--workers",
        metavar="N|auto",
        help="client processes sharing the lanes; auto: from this machine's measured client "
        "capacity, the server's stream rate and the cores (docs/replay.md)",
    ),
]
OPEN_LOOP_CAP = 1000  # --concurrency when an open-loop run does not give one


def parse_workers(text: str) -> int | Literal["auto"]:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--workers must be a number or auto, got {text!r}") from None
    if n < 1:
        raise UsageError(f"--workers must be at least 1 (or auto), got {n}")
    return n


def concurrency_or_default(concurrency: int | None, open_loop: bool) -> int:
    """``--concurrency``: session lanes in closed loop (default 1); in open loop, the cap on
    concurrent sessions or requests (default :data:`OPEN_LOOP_CAP`)."""
    if concurrency is not None:
        return concurrency
    return OPEN_LOOP_CAP if open_loop else 1


def shared_values(ctx: typer.Context) -> dict[str, Any]:
    """The ``ReplayOptions`` values of the flags `replay` and `sweep` share, from the command's
    parsed flags (``ctx.params``, by parameter name); ``None`` = not given."""
    from agentx.core.percentiles import parse_percentiles
    from agentx.replay.options import parse_extra_body

    flags = ctx.params
    return {
        "trace": flags["trace"],
        "endpoint": flags["endpoint"],
        "model": flags["model"],
        "duration_s": flags["duration"],
        "max_requests": flags["max_requests"],
        "sessions": flags["sessions"],
        "time_scale": flags["time_scale"],
        "max_think_s": flags["max_think"],
        "assistant": flags["assistant"],
        "salt": flags["salt"],
        "warmup": flags["warmup"],
        "api": flags["api"],
        "extra_body": parse_extra_body(flags["extra_body"]),
        "ignore_eos": flags["ignore_eos"],
        "scrape_metrics": not flags["no_metrics"],
        "seed": flags["seed"],
        "timeout_s": flags["timeout"],
        "block_size": flags["block_size"],
        "api_key": flags["api_key"],
        "progress": not flags["json_out"] and err.is_terminal,
        "percentiles": parse_percentiles(flags["percentiles"] or ""),
        "reset_cache": flags["reset_cache"],
        "cost": cost_from_flags(flags),
    }
