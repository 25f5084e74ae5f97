"""The page every HTML view of agentx is built in, and the rules for the file it is written to.

A page is self-contained: inline CSS (the same styles for every view), inline SVG, no scripts, no
fetches. Every page carries a marker naming the results it was made from (a digest of their
directories, never the paths): agentx rewrites a page it made from the same results without
``--force``, and never replaces any other file without it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

from agentx.core.errors import UsageError
from agentx.core.outputs import check_output, write_atomic
from agentx.report import svg

CSS = (
    """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#111827;
max-width:1040px;margin:24px auto;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;
padding-bottom:4px}.meta{color:#4b5563}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{border:1px solid #e5e7eb;border-radius:8px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#6b7280;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #e5e7eb;padding:4px 10px;text-align:right}th{background:#f9fafb}
td:first-child,th:first-child{text-align:left}td:not(:first-child){white-space:nowrap}.pass{color:#15803d;font-weight:600}
.fail{color:#b91c1c;font-weight:600}.warn{background:#fef2f2;border:1px solid #fecaca;padding:8px 12px;
border-radius:8px;color:#991b1b}.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{max-width:100%;height:auto}.charts>svg{flex:0 1 auto;min-width:0}
details pre{background:#f9fafb;padding:8px;overflow:auto;white-space:pre-wrap;word-break:break-all}
.note{color:#6b7280;font-size:12px}.tw{overflow-x:auto;max-width:100%}
.better{color:#15803d}.worse{color:#b91c1c}.meta{overflow-wrap:anywhere}
.card.err{border:2px solid #d97706;background:#fffbeb}.card.err b{color:#92400e}
.card.bad{border:2px solid #dc2626;background:#fef2f2}.card.bad b{color:#b91c1c}
.card.hit{border-color:#2563eb}.errors{margin:0 0 12px}.errors td,.errors th{text-align:left;white-space:normal}
.config{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0;color:#374151}.config b{color:#111827}
.verdict{font-size:16px;font-weight:600;margin:12px 0}
.replicas th,.replicas td{padding:4px 6px}
@media (max-width:600px){body{margin:12px auto;padding:0 8px}th,td{padding:3px 6px}
.card{min-width:96px}.card b{font-size:17px}}
"""
    + svg.CHART_CSS
)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (for cells this module built itself)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if raw else escape(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return (
        f"<div class='tw'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


GENERATOR = "agentx"
SOURCE_META = "agentx-source"
_SOURCE = re.compile(rf'<meta name="{SOURCE_META}" content="([0-9a-f]+)">')
HEAD_BYTES = 4096  # where a page's marker is: in its head, before the styles


def page_source(*dirs: str | os.PathLike[str]) -> str:
    """The marker of a page made from these results directories: a digest of their resolved
    paths (the page never holds the paths themselves)."""
    names = sorted(str(Path(d).resolve()) for d in dirs)
    return hashlib.sha256("\0".join(names).encode()).hexdigest()[:16]


def source_of(path: str | os.PathLike[str]) -> str | None:
    """The marker of an HTML page agentx wrote (``None``: no such file, or not agentx's)."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    m = _SOURCE.search(head)
    return m.group(1) if m else None


def check_page(path: str | os.PathLike[str], source: str | None, *, force: bool) -> None:
    """Refuse ``path`` as a page's output when it exists and is not the page agentx made from
    the same results (``source``), unless ``force``."""
    held = source_of(path)
    if held is not None and held != source and not force:
        raise UsageError(
            f"{path} already exists (agentx's page of other results): pass --force to replace "
            "it, or choose another path"
        )
    check_output(path, force=force or (source is not None and held == source))


def page(title: str, body: str, source: str | None = None) -> str:
    """A self-contained page: inline CSS, no script, nothing fetched; ``source`` is the marker
    of the results it was made from (:func:`page_source`)."""
    marker = "" if source is None else f'<meta name="{SOURCE_META}" content="{source}">'
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f'<meta name="generator" content="{GENERATOR}">{marker}'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def write_page(
    html: str, path: str | os.PathLike[str], *, force: bool = True, source: str | None = None
) -> None:
    """Write a page to ``path`` (via a temporary file, so a reader never sees half of it); an
    existing file is refused unless ``force`` or it is the page of the same ``source``."""
    check_page(path, source, force=force)
    write_atomic(path, html, force=True)
