"""The Prometheus text exposition format (0.0.4, and the sample lines of OpenMetrics 1.0).

Only what a scraper needs: ``name{label="value",...} value [timestamp]`` lines, with escaped label
values, ``+Inf``/``-Inf``/``NaN`` and OpenMetrics exemplars (ignored). ``# HELP``/``# TYPE``
comments and lines that do not parse are skipped: one odd line from a server must not cost the run
its cache figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_LINE = re.compile(
    r"""^([a-zA-Z_:][a-zA-Z0-9_:]*)        # metric name
    [ \t]*(?:\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?  # optional label set; values may hold } or "
    [ \t]+(\S+)                             # value
    (?:[ \t]+(-?[0-9.eE+-]+))?              # optional timestamp
    [ \t]*(?:\#.*)?$                        # optional OpenMetrics exemplar
    """,
    re.VERBOSE,
)
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(?:,|$)')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPE = {"n": "\n", "\\": "\\", '"': '"'}


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample line: ``name{labels} value``."""

    name: str
    labels: Mapping[str, str]
    value: float


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESCAPE.sub(lambda m: _UNESCAPE.get(m[1], "\\" + m[1]), s)


def _labels(block: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    pos = 0
    block = block.rstrip(" \t,")
    while pos < len(block):
        m = _LABEL.match(block, pos)
        if m is None:
            return None
        out[m[1]] = _unescape(m[2])
        pos = m.end()
    return out


def _value(text: str) -> float | None:
    try:
        return float(text)  # accepts +Inf, -Inf, NaN, 1e+06 ...
    except ValueError:
        return None


def parse_prometheus(text: str, prefixes: tuple[str, ...] | None = None) -> list[Sample]:
    """Every sample in ``text``; with ``prefixes``, only metrics whose name starts with one.

    The prefix filter is a plain ``str.startswith`` on the raw line, done before any regex, so a
    scraper that wants five metrics out of a 2,000-line vLLM page pays for five.
    """
    samples: list[Sample] = []
    for raw in text.split("\n"):  # the format is \n-delimited; label values may hold \r
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if prefixes is not None and not line.startswith(prefixes):
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        value = _value(m[3])
        if value is None:
            continue
        labels = _labels(m[2]) if m[2] else {}
        if labels is None:
            continue
        samples.append(Sample(m[1], labels, value))
    return samples


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def render_prometheus(samples: Iterable[Sample]) -> str:
    """Samples back to text format (for tests and fixtures); ``parse_prometheus`` inverts it."""
    lines = []
    for s in samples:
        labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
        lines.append(
            f"{s.name}{{{labels}}} {_format_value(s.value)}"
            if labels
            else f"{s.name} {_format_value(s.value)}"
        )
    return "\n".join(lines) + "\n"
