"""``ReplayOptions``: every ``agentx replay`` option as one frozen value (see docs/replay.md),
each field declared as the option that sets it; the schedule's and the workload's options are
embedded (:mod:`agentx.core.options`)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from agentx.core.errors import UsageError
from agentx.core.options import (
    Panel,
    build,
    coerce_choices,
    flat,
    group,
    option,
    required,
)
from agentx.core.outputs import FORCE, output_flag
from agentx.core.percentiles import PERCENTILES
from agentx.core.urls import check_http_url, redact_header, redact_url
from agentx.metrics.cost import CostOptions
from agentx.prefixcache.tokenizer import TOKENIZER
from agentx.routing import (
    DEFAULT_ROUTE,
    ROUTE,
    SESSION_HEADER,
    Route,
    SessionHeader,
    session_header,
)
from agentx.schedule.arrivals import ArrivalError, ArrivalProcess, Arrivals, arrival_process
from agentx.schedule.options import MAX_SECONDS, ScheduleOptions, format_ratio
from agentx.workload.options import WorkloadOptions
from agentx.workload.scenario import scenario_values

DEFAULT_TIMEOUT_S = 600.0
OPEN_LOOP_CAP = 1000  # --concurrency when an open-loop run does not give one


class Assistant(StrEnum):
    """``--assistant``: the assistant turns a replay sends."""

    RECORDED = "recorded"  # the captured ones
    LIVE = "live"  # the server's own replies, threaded into the next turn


DEFAULT_MAX_FAILED_RATIO = 0.5  # a run where most requests fail measures nothing: stop it


def parse_failed_ratio(text: object) -> float | None:
    """``--max-failed-ratio``: a share of the measured requests (0..1), or ``off``/``none``."""
    if text is None or isinstance(text, float):
        return text
    word = str(text).strip().lower()
    if word in ("off", "none"):
        return None
    try:
        value = float(word)
    except ValueError:
        raise UsageError(
            f"--max-failed-ratio must be a number from 0 to 1 or off, got {text!r}"
        ) from None
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"--max-failed-ratio must be between 0 and 1 (or off), got {text}")
    return value


def parse_workers(text: str) -> int | Literal["auto"]:
    """``--workers``: a number of processes, or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--workers must be a number or auto, got {text!r}") from None
    if n < 1:
        raise UsageError(f"--workers must be at least 1 (or auto), got {n}")
    return n


def _arrival(text: object) -> ArrivalProcess:
    try:
        return arrival_process(text)
    except ArrivalError as exc:
        raise UsageError(str(exc)) from None


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


def parse_urls(typed: object) -> tuple[str, ...]:
    """A repeatable URL option's texts (one URL, or a list of them) as a tuple, blanks dropped."""
    if isinstance(typed, str):
        typed = [typed]
    if not isinstance(typed, list | tuple):
        raise ValueError(f"expected a URL or a list of URLs, got {type(typed).__name__}")
    return tuple(str(u).strip() for u in typed if str(u).strip())


def parse_endpoints(typed: object) -> tuple[str, ...]:
    """``--endpoint``, repeatable: one URL (a caller's string) or several -> the tuple of them,
    each once (a replica given twice would be two replicas of one server)."""
    urls = parse_urls(typed)
    if not urls:
        raise UsageError("--endpoint: give the server's URL")
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            raise UsageError(f"--endpoint {redact_url(url)} is given twice")
        seen.add(url)
    return urls


# set by the client itself: the body's framing, and the identity encoding the lanes read
RESERVED_HEADERS = frozenset({"content-length", "transfer-encoding", "accept-encoding"})
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110)


def header_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be sent as an HTTP header value (``None``: it can), in words that
    never repeat it: a pasted key often carries a line break or a non-breaking space."""
    if any(c in value for c in "\r\n\0"):
        return "is more than one line (it has a CR, LF or NUL)"
    if not value.isascii():
        return "has a non-ASCII character (a pasted non-breaking space?)"
    if not value.isprintable():
        return "has a control character"
    return None


def parse_headers(typed: object) -> tuple[tuple[str, str], ...]:
    """``--header NAME:VALUE``, repeatable: ``["X-Route: a", "X-Team:b"]`` ->
    ``(("X-Route", "a"), ("X-Team", "b"))``. A bad one is named, never its value (it may be a
    credential)."""
    texts = [typed] if isinstance(typed, str) else list(cast(Iterable[object], typed or ()))
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, text in enumerate(texts, 1):
        if isinstance(text, tuple | list) and len(text) == 2:  # as a caller may give them
            name, value = (str(x) for x in text)
        else:
            name, sep, value = str(text).partition(":")
            if not sep:
                raise ValueError(f"#{n} is not NAME:VALUE (e.g. --header 'X-Route: pool-a')")
        name, value = name.strip(), value.strip()
        if not _HEADER_NAME.match(name):
            raise ValueError(f"#{n}: {name[:40]!r} is not a header name")
        if any(c in value for c in "\r\n\0"):
            raise ValueError(f"{name}: a header value is one line")
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(f"{name} is set by agentx's client (the body's framing and encoding)")
        if name.lower() in seen:
            raise ValueError(f"{name} is given twice")
        seen.add(name.lower())
        out.append((name, value))
    return tuple(out)


_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_labels(typed: object) -> tuple[tuple[str, str], ...]:
    """``--label NAME=VALUE``, repeatable: ``["engine=vllm-0.32", "offload=dram"]`` ->
    ``(("engine", "vllm-0.32"), ("offload", "dram"))``, sorted by name (a trend groups runs
    by them; ``summary.json`` holds them as ``labels``)."""
    texts = [typed] if isinstance(typed, str) else list(cast(Iterable[object], typed or ()))
    out: dict[str, str] = {}
    for text in texts:
        if isinstance(text, tuple | list) and len(text) == 2:  # as a caller may give them
            name, value = (str(x) for x in text)
        else:
            name, sep, value = str(text).partition("=")
            if not sep:
                raise ValueError(
                    f"{str(text)[:40]!r} is not NAME=VALUE (e.g. --label engine=vllm-0.32)"
                )
        name, value = name.strip(), value.strip()
        if not _LABEL_NAME.match(name):
            raise ValueError(f"{name[:40]!r} is not a label name (letters, digits, _ . -)")
        if not value or any(c in value for c in "\r\n\0"):
            raise ValueError(f"{name}: a label's value is one non-empty line")
        if name in out:
            raise ValueError(f"{name} is given twice")
        out[name] = value
    return tuple(sorted(out.items()))


MAX_START_AT_S = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()  # datetime's last


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
        if not epoch <= MAX_START_AT_S:  # NaN and infinity too
            raise UsageError(
                f"--start-at {t[:30]} is past the year 9999: give epoch seconds "
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


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """What to replay, against what, and how. Defaults are the CLI's; :meth:`of` builds one
    from flat values (``concurrency=2``, not ``schedule=...``).

    ``api_key`` is never printed (``repr=False``) nor written (:meth:`config` leaves it out);
    when ``None`` the ``OPENAI_API_KEY`` environment variable is used. URLs are written
    redacted (:func:`agentx.core.urls.redact_url`); a query string of ``endpoint`` is sent with
    every request (gateways that take their key there). ``headers`` go with every request too,
    and are written with a credential's value redacted (:func:`agentx.core.urls.redact_header`).
    """

    trace: Path
    # the first --endpoint; every one given is in ``endpoints`` (a caller may give a list here)
    endpoint: str = required(
        "--endpoint",
        hidden=("--url", "--target"),  # AIPerf's and GuideLLM's names for it
        metavar="URL",
        multiple=True,
        parse=parse_endpoints,
        panel=Panel.SERVER,
        help="server base URL, e.g. http://127.0.0.1:8000 or .../v1 (--url and --target too); "
        "repeatable: several replicas, each its own origin and /metrics, requests spread by "
        "--route",
    )
    model: str | None = option(
        None,
        "--model",
        metavar="NAME",
        panel=Panel.SERVER,
        help="model name [default: the endpoint's first model]",
    )
    schedule: ScheduleOptions = group(ScheduleOptions)  # lanes, think time, warm-up, stopping
    workload: WorkloadOptions = group(WorkloadOptions)  # sessions, seed, bodies, the preset
    assistant: Assistant = option(
        Assistant.RECORDED,
        "--assistant",
        choices=Assistant,
        panel=Panel.REQUESTS,
        help="recorded (captured assistant turns) or live (the server's own replies)",
    )
    max_failed_ratio: float | None = option(  # more failed measured requests: the run fails
        DEFAULT_MAX_FAILED_RATIO,
        "--max-failed-ratio",
        parse=parse_failed_ratio,
        metavar="F|off",
        panel=Panel.GATES,
        help="fail the run (exit 1) when more than this share of measured requests failed "
        "(stopped early once max(concurrency, 10) have ended); off: never",
    )
    min_coverage: float | None = option(  # measured traffic must reach this share of --duration
        None,
        "--min-coverage",
        min=0.0,
        max=1.0,
        metavar="F",
        panel=Panel.GATES,
        help="fail the run (exit 1) when measured traffic covers less of a >= 900 s --duration",
    )
    ignore_eos: bool | None = option(  # None: on for servers known to honour it (vLLM, SGLang)
        None,
        "--ignore-eos/--no-ignore-eos",
        panel=Panel.REQUESTS,
        show_default=False,
        help="pin output lengths with ignore_eos/min_tokens [default: on for vLLM, SGLang, serve-sim]",
    )
    metrics_url: str | None = option(  # None: <endpoint>/metrics when it answers
        None,
        "--metrics-url",
        metavar="URL",
        panel=Panel.SERVER_METRICS,
        help="Prometheus URL [default: ENDPOINT/metrics when it answers]",
    )
    metrics_headers: tuple[tuple[str, str], ...] = option(  # (name, value): with each scrape
        (),
        "--metrics-header",
        parse=parse_headers,
        multiple=True,
        metavar="NAME:VALUE",
        panel=Panel.SERVER_METRICS,
        repr=False,
        help="header for a --metrics-url that needs one, repeatable; the API key and --header "
        "go only to the endpoint's origin; a credential's value is never printed or written",
    )
    preflight: bool = option(
        True,
        "--preflight/--no-preflight",
        panel=Panel.SERVER,
        help="before the run, check --model against /v1/models and send one test request "
        "(one token): a server that refuses it stops the run at once, in its own words",
    )
    scrape_metrics: bool = option(
        True,
        "--no-metrics",
        invert=True,
        panel=Panel.SERVER_METRICS,
        help="do not scrape the server's Prometheus metrics",
    )
    slo: str | None = option(
        None,
        "--slo",
        metavar="SPEC",
        panel=Panel.GATES,
        help='checks, e.g. "ttft_p99<=2s,itl_p50<=50ms" (exit 3 when one fails)',
    )
    workers: int | Literal["auto"] = option(  # "auto": agentx.replay.autoworkers decides
        1,
        "--workers",
        parse=parse_workers,
        metavar="N|auto",
        panel=Panel.SCALE_OUT,
        help="client processes sharing the lanes; auto: from this machine's measured client "
        "capacity, the server's stream rate and the cores (docs/replay.md)",
    )
    shard: tuple[int, int] = (
        option(  # (index, count): this process runs sessions i % count == index
            (0, 1),
            "--shard",
            parse=parse_shard,
            metavar="I/N",
            panel=Panel.SCALE_OUT,
            help="I/N: run only sessions i mod N == I (multi-machine) [default: 0/1]",
        )
    )
    start_at_s: float | None = option(  # epoch seconds the lanes start at (a barrier)
        None,
        "--start-at",
        parse=parse_start_at,
        metavar="TIME",
        panel=Panel.SCALE_OUT,
        help="start the lanes at TIME (epoch seconds, or ISO 8601: UTC without an offset) "
        "after loading and probing, so shards start together; at once if it has passed",
    )
    timeout_s: float = option(
        DEFAULT_TIMEOUT_S,
        "--timeout",
        min=0.001,
        metavar="SECONDS",
        panel=Panel.REQUESTS,
        help="per-request timeout, SECONDS",
    )
    block_size: int | None = option(  # theoretical-hit block size; None: the server's, else 16
        None,
        "--block-size",
        min=1,
        metavar="N",
        panel=Panel.TOKENIZER,
        help="block size of the theoretical hit rate [default: the server's, else 16]",
    )
    tokenizer: str | None = option(None, flag=TOKENIZER)  # theoretical figures' tokens
    api_key: str | None = option(
        None,
        "--api-key",
        envvar="OPENAI_API_KEY",
        metavar="KEY",
        panel=Panel.SERVER,
        repr=False,
        help="API key; never printed or written",
    )
    headers: tuple[tuple[str, str], ...] = option(  # (name, value): with every request
        (),
        "--header",
        parse=parse_headers,
        multiple=True,
        metavar="NAME:VALUE",
        panel=Panel.SERVER,
        repr=False,
        help="extra request header for a gateway or router, repeatable, sent with every "
        "request (wins over agentx's own); a credential's value is never printed or written",
    )
    # a server-side router's session identity on every request (None: none sent)
    session_header: SessionHeader | None = option(None, flag=SESSION_HEADER)
    route: Route = option(DEFAULT_ROUTE, flag=ROUTE)  # with two or more endpoints
    insecure: bool = option(
        False,
        "--insecure",
        panel=Panel.SERVER,
        help="do not verify the server's TLS certificate (https)",
    )
    ca_bundle: Path | None = option(  # None: certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR
        None,
        "--ca-bundle",
        metavar="FILE",
        panel=Panel.SERVER,
        help="PEM file of the CAs to trust for an https endpoint, instead of the default "
        "bundle (certifi's; SSL_CERT_FILE or SSL_CERT_DIR when set)",
    )
    output_dir: Path | None = option(
        None, flag=output_flag("results directory [default: results/replay-TIME]", metavar="DIR")
    )
    labels: tuple[tuple[str, str], ...] = option(  # (name, value), sorted: summary.json's labels
        (),
        "--label",
        parse=parse_labels,
        multiple=True,
        metavar="NAME=VALUE",
        panel=Panel.OUTPUT,
        help="a label of the run, repeatable (e.g. --label engine=vllm-0.32 --label "
        "offload=dram): recorded in summary.json; a trend (report --trend) groups runs by them",
    )
    force: bool = option(False, flag=FORCE)  # replace the results already in output_dir
    progress: bool = True  # live display (the CLI turns it off for --json or a non-TTY)
    percentiles: tuple[float, ...] = option((), flag=PERCENTILES)  # beyond p50/p90/p99
    cost: CostOptions | None = None  # --gpu-hour-cost, --price, ...: summary.json's cost
    reset_cache: bool = option(  # ask the server to drop its prefix cache before the run
        False,
        "--reset-cache/--no-reset-cache",
        panel=Panel.SERVER_METRICS,
        help="reset the server's prefix cache before the run (vLLM, SGLang, serve-sim); off by "
        "default: a run measures the server as it finds it (sweep resets before each level)",
    )
    # open loop (agentx.replay.open_loop): sessions or requests arriving per second, whole run
    session_rate: float | None = option(
        None,
        "--session-rate",
        metavar="R",
        panel=Panel.OPEN_LOOP,
        help="open loop: new sessions arrive at R per second (--arrival); --concurrency caps "
        f"concurrent sessions [default cap: {OPEN_LOOP_CAP}]",
    )
    request_rate: float | None = option(
        None,
        "--request-rate",
        metavar="R",
        panel=Panel.OPEN_LOOP,
        help="open loop: every request arrives alone, R per second, in recorded order (traces "
        "without session structure, e.g. Mooncake); --concurrency caps concurrent requests "
        f"[default cap: {OPEN_LOOP_CAP}]",
    )
    arrival: ArrivalProcess = option(
        ArrivalProcess.POISSON,
        "--arrival",
        choices=ArrivalProcess,
        parse=_arrival,
        panel=Panel.OPEN_LOOP,
        help="open-loop arrival process (seeded by --seed)",
    )
    burstiness: float = option(  # gamma shape, as vLLM's --burstiness
        1.0,
        "--burstiness",
        metavar="B",
        panel=Panel.OPEN_LOOP,
        help="gamma arrivals' shape (as vLLM's): < 1 burstier than Poisson, > 1 steadier",
    )
    # one endpoint that is a server-side router: its replicas' /metrics, each scraped on its own
    replica_metrics: tuple[str, ...] = option(
        (),
        "--replica-metrics",
        parse=parse_urls,
        multiple=True,
        metavar="URL",
        panel=Panel.SERVER_METRICS,
        help="with one --endpoint that is a server-side router (Dynamo, llm-d, vllm-router, ...): "
        "a replica's Prometheus URL, repeatable, so each replica's own cache figures are "
        "measured; --metrics-header goes with them, the API key and --header only to the "
        "endpoint's origin",
    )
    endpoints: tuple[str, ...] = ()  # every --endpoint, the first being ``endpoint``

    @classmethod
    def of(cls, **values: Any) -> ReplayOptions:
        """From flat values: any field of these options or of the groups they embed."""
        return build(cls, values)

    @property
    def routed(self) -> bool:
        """Whether requests are spread over several endpoints by :attr:`route` (client-side)."""
        return len(self.endpoints) > 1

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
            return Arrivals(rate, self.arrival, self.burstiness, self.workload.rng_seed)
        except ArrivalError as exc:
            raise UsageError(str(exc)) from None

    def __post_init__(self) -> None:
        coerce_choices(self)
        given = parse_endpoints(self.endpoint)
        if len(given) == 1 and self.endpoints and self.endpoints[0] == given[0]:
            given = self.endpoints  # a copy (dataclasses.replace) of a routed run's options
        object.__setattr__(self, "endpoint", given[0])
        object.__setattr__(self, "endpoints", given)
        try:  # as a caller may give them: "NAME: VALUE" texts
            object.__setattr__(self, "headers", parse_headers(self.headers))
        except ValueError as exc:
            raise UsageError(f"--header: {exc}") from None
        try:
            object.__setattr__(self, "labels", parse_labels(self.labels))
        except ValueError as exc:
            raise UsageError(f"--label: {exc}") from None
        try:
            object.__setattr__(self, "metrics_headers", parse_headers(self.metrics_headers))
        except ValueError as exc:
            raise UsageError(f"--metrics-header: {exc}") from None
        try:  # as a caller may give it: a preset or a header name
            object.__setattr__(self, "session_header", session_header(self.session_header))
        except ValueError as exc:
            raise UsageError(f"--session-header: {exc}") from None
        validate(self)

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def config(self) -> dict[str, Any]:
        """The options as JSON-able data for ``summary.json``, flat (the schedule's and the
        workload's among them): never the API key."""
        data = flat(self)
        data.pop("api_key", None)
        data.pop("labels", None)  # summary.json's own key: what runs are told apart by
        data["endpoint"] = redact_url(self.endpoint)
        data.pop("endpoints", None)
        if self.routed:  # a run of one endpoint writes the config it always did
            data["endpoints"] = [redact_url(e) for e in self.endpoints]
        else:
            data.pop("route", None)
        if self.replica_metrics:
            data["replica_metrics"] = [redact_url(u) for u in self.replica_metrics]
        else:
            data.pop("replica_metrics", None)
        data["metrics_url"] = redact_url(self.metrics_url) if self.metrics_url else None
        data["headers"] = [redact_header(name, value) for name, value in self.headers]
        data["metrics_headers"] = [redact_header(n, v) for n, v in self.metrics_headers]
        if self.session_header is None:  # a run without one writes the config it always did
            data.pop("session_header", None)
        else:
            data["session_header"] = str(self.session_header)
        data["ca_bundle"] = str(self.ca_bundle) if self.ca_bundle else None
        data["trace"] = str(self.trace)
        data["output_dir"] = str(self.output_dir) if self.output_dir else None
        data["shard"] = f"{self.shard[0]}/{self.shard[1]}"
        data["percentiles"] = list(self.percentiles)
        data["start_ratio"] = format_ratio(self.schedule.start_ratio)
        return data


def validate(o: ReplayOptions) -> None:
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise UsageError(message)

    o.schedule.check()
    o.workload.check()
    key = o.resolved_api_key()
    if key is not None and (problem := header_value_problem(key)) is not None:
        raise UsageError(f"--api-key (or OPENAI_API_KEY) {problem}; the key is not shown")
    need(
        math.isfinite(o.timeout_s) and o.timeout_s <= MAX_SECONDS,
        f"--timeout must be a finite number of seconds up to {MAX_SECONDS:.0e}, got {o.timeout_s}",
    )
    need(
        o.max_failed_ratio is None or 0.0 <= o.max_failed_ratio <= 1.0,
        "--max-failed-ratio must be between 0 and 1",
    )
    need(o.min_coverage is None or 0.0 <= o.min_coverage <= 1.0, "--min-coverage must be 0..1")
    need(o.workers == "auto" or o.workers >= 1, "--workers must be at least 1 (or auto)")
    need(
        o.workers == "auto" or o.workers <= o.schedule.concurrency,
        "--workers cannot exceed --concurrency (lanes are split)",
    )
    need(
        o.session_rate is None or o.request_rate is None,
        "--session-rate and --request-rate are exclusive (sessions or single requests arrive)",
    )
    need(
        o.open_loop or (o.arrival is ArrivalProcess.POISSON and o.burstiness == 1.0),
        "--arrival and --burstiness shape open-loop arrivals: add --session-rate or --request-rate",
    )
    if o.open_loop:
        o.arrivals()  # checks the rate, the process and its burstiness
    need(
        o.request_rate is None or o.assistant is Assistant.RECORDED,
        "--request-rate sends every request alone: --assistant live needs the previous answer",
    )
    need(
        not o.open_loop or (o.schedule.warmup == 0 and not o.schedule.snapshot),
        "open loop (--session-rate, --request-rate) starts each session from its first request: "
        "not with --warmup, --start-ratio or a --scenario that sets them",
    )
    need(
        not (o.insecure and o.ca_bundle is not None),
        "--insecure verifies no certificate: not with --ca-bundle (which names the CAs to trust)",
    )
    need(
        o.ca_bundle is None or o.ca_bundle.is_file(),
        f"--ca-bundle {o.ca_bundle}: no such file",
    )
    index, count = o.shard
    need(count >= 1 and 0 <= index < count, "--shard must be I/N with 0 <= I < N")
    need(o.timeout_s > 0, "--timeout must be positive")
    need(o.block_size is None or o.block_size >= 1, "--block-size must be at least 1")
    need(
        o.assistant is Assistant.RECORDED or o.workload.api == "chat",
        "--assistant live threads the server's replies as chat messages: use it with --api chat",
    )
    need(
        not (o.routed and o.metrics_url),
        "--metrics-url names one server: with several --endpoint each replica is scraped at "
        "its own ENDPOINT/metrics",
    )
    need(
        not (o.routed and o.replica_metrics),
        "--replica-metrics is for one --endpoint that is a server-side router; with several "
        "--endpoint each replica is scraped at its own ENDPOINT/metrics",
    )
    urls = [
        *(("--endpoint", e) for e in o.endpoints),
        ("--metrics-url", o.metrics_url),
        *(("--replica-metrics", u) for u in o.replica_metrics),
    ]
    for flag, url in urls:
        if url is not None:
            check_http_url(url, flag)
            need(
                "@" not in urlsplit(url).netloc,
                f"{flag} {redact_url(url)!r}: credentials in a URL (user:pass@) are not sent; "
                "pass the key with --api-key (or OPENAI_API_KEY)",
            )


def scenario_options(scenario: str | None = None, **explicit: Any) -> ReplayOptions:
    """``ReplayOptions`` from a preset and the options given explicitly, by flat name (see
    :func:`scenario_values`; ``None`` = not given). In open loop, ``concurrency`` not given is
    :data:`OPEN_LOOP_CAP` (the cap on concurrent sessions or requests), else 1."""
    values = scenario_values(scenario, **explicit)
    open_loop = values.get("session_rate") is not None or values.get("request_rate") is not None
    if open_loop:
        values.setdefault("concurrency", OPEN_LOOP_CAP)
    return build(ReplayOptions, values)


def describe(o: ReplayOptions) -> str:
    """The effective schedule settings, one line (printed at the start of a scenario run)."""
    parts = [
        o.schedule.describe(),
        f"max failed ratio {_value(o.max_failed_ratio)}",
        f"min coverage {_value(o.min_coverage)}",
        f"spawn/join {o.schedule.spawn_join}",
        f"seed {o.workload.seed}",
        f"timeout {o.timeout_s:g} s",
        f"ignore_eos {'auto' if o.ignore_eos is None else 'on' if o.ignore_eos else 'off'}",
        f"marker {'on' if o.workload.salt else 'off'}",
    ]
    head = f"scenario {o.workload.scenario}" if o.workload.scenario else "schedule"
    return f"{head}: " + ", ".join(parts)


def _value(v: float | None) -> str:
    return "none" if v is None else f"{v:g}"
