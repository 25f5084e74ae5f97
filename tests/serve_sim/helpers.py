"""Helpers for serve-sim tests."""

from __future__ import annotations

import re

# Fast but *modelled* latency, so streaming tests run in milliseconds.
QUICK = {"prefill_tps": 2_000_000.0, "decode_tps": 4_000.0, "overhead_ms": 1.0}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> Samples:
    """Prometheus text exposition -> {(name, labels): value}; fails on a malformed line."""
    out: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"malformed metrics line: {line!r}"
        labels = frozenset(_LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def metric(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and want <= ls]
    assert found, f"no sample {name} {labels}"
    return sum(found)


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of each SSE event of a whole stream, ``\\n`` or ``\\r\\n`` line ends;
    a comment is ("comment", text)."""
    events: list[tuple[str | None, str]] = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        name: str | None = None
        for line in block.split("\n"):
            if line.startswith(":"):
                events.append(("comment", line[1:].strip()))
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, line[6:]))
    return events
