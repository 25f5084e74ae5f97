"""Prometheus ``/metrics``: a text-format parser and a scraper that reports a run's deltas.

See :mod:`agentx.metrics.prometheus.server_metrics` for which vLLM and SGLang metrics are read and how.
"""

from agentx.metrics.prometheus.parse import Sample, parse_prometheus, render_prometheus
from agentx.metrics.prometheus.scraper import MetricsScraper
from agentx.metrics.prometheus.server_metrics import ServerMetrics, build_server_metrics, snapshot

__all__ = [
    "MetricsScraper",
    "Sample",
    "ServerMetrics",
    "build_server_metrics",
    "parse_prometheus",
    "render_prometheus",
    "snapshot",
]
