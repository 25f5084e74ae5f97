"""``agentx report``: re-render saved results, optionally against a base run, optionally as HTML."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType

from agentx.report.compare import compare
from agentx.report.html import write_html
from agentx.report.render import render_compare, render_summary
from agentx.report.results_dir import load_summary


@dataclass(frozen=True, slots=True)
class Report:
    data: dict[str, Any]  # what --json prints: the summary, or the comparison
    renderable: RenderableType  # what the terminal shows otherwise


def build_report(
    results_dir: str | os.PathLike[str],
    base_dir: str | os.PathLike[str] | None = None,
    html_path: str | os.PathLike[str] | None = None,
) -> Report:
    """Load ``results_dir`` (and ``base_dir``), write the HTML page if asked, return what to show."""
    summary = load_summary(results_dir)
    if html_path is not None:
        write_html(summary, html_path)
    if base_dir is None:
        return Report(summary, render_summary(summary))
    cmp = compare(load_summary(base_dir), summary)
    return Report(cmp, Group(render_summary(summary), render_compare(cmp)))
