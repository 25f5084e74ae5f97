"""Clean, shareable traces: ``agentx scrub``, ``agentx anonymize`` and ``agentx convert``.

- :mod:`agentx.scrub.engine` — the streaming scrub (:func:`scrub_trace`, :class:`Scrubber`)
- :mod:`agentx.scrub.rules` — the rules, the flags scrub sets
- :mod:`agentx.scrub.secrets` — secret patterns and consistent placeholders
- :mod:`agentx.scrub.toolpairs` — orphaned tool calls/results and their repair
- :mod:`agentx.scrub.report` — the report, the theoretical hit rate before/after
- :mod:`agentx.scrub.synth` — token-exact synthetic text (anonymize, hash-only imports)
- :mod:`agentx.scrub.anonymize` — ``agentx anonymize``
- :mod:`agentx.scrub.convert` — ``agentx convert``
"""

from agentx.scrub.engine import Scrubber, ScrubOptions, scrub_exchanges, scrub_trace
from agentx.scrub.report import ScrubReport, render_report

__all__ = [
    "ScrubOptions",
    "ScrubReport",
    "Scrubber",
    "render_report",
    "scrub_exchanges",
    "scrub_trace",
]
