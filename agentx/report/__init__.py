"""Rendering of replay results: terminal tables, comparison of two runs, a self-contained HTML page."""

from agentx.report.compare import compare
from agentx.report.html import render_html, write_html
from agentx.report.render import render_compare, render_summary
from agentx.report.results_dir import load_results, load_summary

__all__ = [
    "compare",
    "load_results",
    "load_summary",
    "render_compare",
    "render_html",
    "render_summary",
    "write_html",
]
