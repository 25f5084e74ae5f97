"""Metrics: percentiles, per-request latency math, Prometheus scraping, SLOs and ``summary.json``.

- ``percentiles``: :func:`~agentx.core.percentiles.percentiles` and the ``P`` shape of the contract.
- ``latency``: the per-request figures (TTFT, TPOT, per-user tokens/s, ...) every roll-up uses.
- ``prometheus``: text-format parser, :class:`~agentx.metrics.prometheus.MetricsScraper`.
- ``slo``: ``--slo`` parsing, evaluation and goodput.
- ``summary``: :func:`~agentx.metrics.summary.build_summary` -> the ``agentx.summary/1`` object.
"""
