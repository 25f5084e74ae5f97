"""Prometheus text exposition under vLLM's metric names and labels.

Names, label sets (``engine``, ``model_name``) and bucket edges follow vLLM V1's
``PrometheusStatLogger``, and the exposition follows prometheus_client's as vLLM 0.32 serves it:
a counter family is named with its ``_total`` suffix in ``# HELP``/``# TYPE`` as on its samples,
followed by a ``_created`` gauge (the start time). So a scraper written for vLLM (agentx's own,
agentx-harness's) reads serve-sim unchanged. The prefix
cache accounting follows vLLM too: ``prefix_cache_queries`` counts every prompt token looked
up, ``prefix_cache_hits`` the tokens served by the GPU tier; tokens served by the offload tier
count as ``external_kv_transfer`` (how vLLM reports a KV connector such as CPU offloading).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentx.prefixcache.kvcache import CacheCounters

FINISH_REASONS = ("stop", "length", "abort")

TTFT_BUCKETS_S = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS_S = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
REQUEST_BUCKETS_S = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)


@dataclass(slots=True)
class Histogram:
    buckets: Sequence[float]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1


@dataclass(slots=True)
class SimMetrics:
    """Request-level counters the engine keeps beside the cache's own counters."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    finished: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FINISH_REASONS, 0))
    ttft_s: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS_S))
    itl_s: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS_S))
    e2e_s: Histogram = field(default_factory=lambda: Histogram(REQUEST_BUCKETS_S))
    queue_s: Histogram = field(default_factory=lambda: Histogram(REQUEST_BUCKETS_S))


@dataclass(frozen=True, slots=True)
class Gauges:
    running: int
    waiting: int
    kv_usage: float
    block_size: int
    gpu_blocks: int
    offload_blocks: int  # capacity of the offload tier in blocks (0 = none)


def _num(value: float) -> str:
    return repr(float(value))


def render(
    model: str,
    metrics: SimMetrics,
    cache: CacheCounters,
    gauges: Gauges,
    engine: str = "0",
    created_s: float = 0.0,
) -> str:
    """The ``/metrics`` page (``created_s``: the server's start, Unix seconds)."""
    labels = f'engine="{engine}",model_name="{_escape(model)}"'
    out: list[str] = []

    def head(name: str, kind: str, doc: str) -> None:
        out.append(f"# HELP {name} {doc}")
        out.append(f"# TYPE {name} {kind}")

    def gauge(name: str, doc: str, value: float) -> None:
        head(name, "gauge", doc)
        out.append(f"{name}{{{labels}}} {_num(value)}")

    def counter(name: str, doc: str, values: dict[str, float]) -> None:
        """One counter family; ``values`` by extra label text (``""`` for none)."""
        head(f"{name}_total", "counter", doc)
        for extra, value in values.items():
            out.append(f"{name}_total{{{labels}{extra}}} {_num(value)}")
        head(f"{name}_created", "gauge", doc)
        for extra in values:
            out.append(f"{name}_created{{{labels}{extra}}} {_num(created_s)}")

    def histogram(name: str, doc: str, h: Histogram) -> None:
        head(name, "histogram", doc)
        cumulative = 0
        for edge, count in zip(h.buckets, h.counts, strict=False):
            cumulative += count
            out.append(f'{name}_bucket{{{labels},le="{_num(edge)}"}} {_num(cumulative)}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {_num(h.n)}')
        out.append(f"{name}_count{{{labels}}} {_num(h.n)}")
        out.append(f"{name}_sum{{{labels}}} {_num(h.total)}")

    gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        gauges.running,
    )
    gauge(
        "vllm:num_requests_waiting", "Number of requests waiting to be processed.", gauges.waiting
    )
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", gauges.kv_usage)
    head("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
    cpu_blocks = str(gauges.offload_blocks) if gauges.offload_blocks else "None"
    out.append(
        f'vllm:cache_config_info{{block_size="{gauges.block_size}",cache_dtype="auto",'
        f'enable_prefix_caching="True",engine="{engine}",num_cpu_blocks="{cpu_blocks}",'
        f'num_gpu_blocks="{gauges.gpu_blocks}",prefix_caching_hash_algo="agentx"}} 1.0'
    )
    counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        {"": cache.queries_tokens},
    )
    counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        {"": cache.gpu_hit_tokens},
    )
    counter(
        "vllm:external_prefix_cache_queries",
        "External prefix cache queries from KV connector cross-instance cache sharing, "
        "in terms of number of queried tokens.",
        {"": cache.offload_queries_tokens},
    )
    counter(
        "vllm:external_prefix_cache_hits",
        "External prefix cache hits from KV connector cross-instance cache sharing, "
        "in terms of number of cached tokens.",
        {"": cache.offload_hit_tokens},
    )
    counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", {"": 0})
    counter(
        "vllm:prompt_tokens", "Number of prefill tokens processed.", {"": metrics.prompt_tokens}
    )
    cached = cache.gpu_hit_tokens + cache.offload_hit_tokens
    counter(
        "vllm:prompt_tokens_by_source",
        "Number of prompt tokens by source.",
        {
            ',source="local_compute"': metrics.prompt_tokens - cached,
            ',source="local_cache_hit"': cache.gpu_hit_tokens,
            ',source="external_kv_transfer"': cache.offload_hit_tokens,
        },
    )
    counter(
        "vllm:prompt_tokens_cached",
        "Number of cached prompt tokens (local + external).",
        {"": cached},
    )
    counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        {"": metrics.generation_tokens},
    )
    counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        {f',finished_reason="{r}"': metrics.finished.get(r, 0) for r in FINISH_REASONS},
    )
    histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        metrics.ttft_s,
    )
    histogram(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        metrics.itl_s,
    )
    histogram(
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.",
        metrics.e2e_s,
    )
    histogram(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.",
        metrics.queue_s,
    )
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
