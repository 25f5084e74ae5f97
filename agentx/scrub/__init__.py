"""Clean, shareable traces: ``agentx scrub`` and ``agentx anonymize``.

``agentx convert`` lives in :mod:`agentx.formats.convert`; the token-exact synthetic text both
use is :mod:`agentx.prefixcache.synth`.

- :mod:`agentx.scrub.pipeline` — the streaming scrub (:func:`scrub_trace`, :class:`Scrubber`)
- :mod:`agentx.scrub.rules` — the rules, the flags scrub sets
- :mod:`agentx.scrub.secrets` — secret patterns and consistent placeholders
- :mod:`agentx.scrub.toolpairs` — orphaned tool calls/results and their repair
- :mod:`agentx.scrub.report` — the report as a table (its JSON: :mod:`agentx.results.scrub`)
- :mod:`agentx.scrub.anonymize` — ``agentx anonymize``
"""

from agentx.results.scrub import ScrubReport
from agentx.scrub.pipeline import Scrubber, ScrubOptions, scrub_exchanges, scrub_trace
from agentx.scrub.report import render_report

__all__ = [
    "ScrubOptions",
    "ScrubReport",
    "Scrubber",
    "render_report",
    "scrub_exchanges",
    "scrub_trace",
]
