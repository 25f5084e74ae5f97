"""Prometheus ``/metrics``: a text-format parser and a scraper that reports a run's deltas.

See :mod:`agentx.metrics.prometheus.server_metrics` for which vLLM and SGLang metrics are read and how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentx.metrics.prometheus.parse import Sample, parse_prometheus, render_prometheus
from agentx.metrics.prometheus.server_metrics import ServerMetrics, build_server_metrics, snapshot

if TYPE_CHECKING:
    from agentx.metrics.prometheus.scraper import MetricsScraper

__all__ = [
    "MetricsScraper",
    "Sample",
    "ServerMetrics",
    "build_server_metrics",
    "parse_prometheus",
    "render_prometheus",
    "snapshot",
]


def __getattr__(name: str) -> Any:
    """The scraper (httpx) loads on first use: ``--kv-from``'s declaration does not need it."""
    if name == "MetricsScraper":
        from agentx.metrics.prometheus.scraper import MetricsScraper

        return MetricsScraper
    raise AttributeError(f"module 'agentx.metrics.prometheus' has no attribute {name!r}")
