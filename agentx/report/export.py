"""Exports of a report: every chart as PNG (``--png DIR``), the run as CSV (``--csv DIR``).

PNG rendering uses resvg (the ``resvg-py`` wheel: a compiled renderer inside the wheel, no
system library) with the charts' own stylesheet; text needs a sans-serif system font (DejaVu on
Debian's base images). CSV files: ``requests.csv`` (one row per replayed request, the columns of
``requests.parquet`` plus the derived milliseconds), ``summary.csv`` (``key,value`` with dotted
keys), ``sessions.csv``, ``turns.csv`` and ``time_series.csv`` (the roll-ups), or ``sweep.csv``
(one row per level). Every file is written to a temporary name and renamed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import orjson

from agentx.core.errors import AgentxError
from agentx.core.outputs import write_atomic
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.report.svg import CHART_CSS
from agentx.results.summary import Summary
from agentx.results.sweep import Sweep
from agentx.results.trend import Trend

PNG_SCALE = 2.0  # device pixels per SVG unit: sharp on high-density screens and in slides
PNG_STYLE = (
    'text{font-family:"DejaVu Sans","Liberation Sans",Arial,Helvetica,sans-serif}' + CHART_CSS
)


def svg_to_png(svg_text: str, scale: float = PNG_SCALE) -> bytes:
    """Rasterise one chart (white background). :class:`AgentxError` without the renderer."""
    try:
        import resvg_py
    except ImportError:
        raise AgentxError(
            "PNG export needs the resvg-py wheel: pip install resvg-py (no wheel for this "
            "platform? the HTML report's SVG charts need nothing)"
        ) from None
    try:
        png = resvg_py.svg_to_bytes(
            svg_string=svg_text, background="#ffffff", style_sheet=PNG_STYLE, zoom=scale
        )
    except ValueError as exc:
        raise AgentxError(f"cannot render a chart as PNG: {exc}") from None
    return bytes(png)


def _write(path: Path, content: bytes) -> None:
    write_atomic(path, content, force=True)  # files of agentx's own naming in the export dir


def write_pngs(charts: Mapping[str, str], out_dir: Path) -> list[Path]:
    """``<name>.png`` for each chart in ``out_dir``; the paths written."""
    written = []
    for name, svg_text in charts.items():
        path = out_dir / f"{name}.png"
        _write(path, svg_to_png(svg_text))
        written.append(path)
    return written


# -- CSV ---------------------------------------------------------------------------------------


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list | tuple | dict):
        return orjson.dumps(v).decode()
    return v


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_cell(v) for v in row])
    return buf.getvalue().encode()


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


DERIVED = (
    ("ttft_ms", lat.ttft_ms),
    ("ttfc_ms", lat.ttfc_ms),
    ("e2e_ms", lat.e2e_ms),
    ("tpot_ms", lat.tpot_ms),
    ("itl_ms_mean", lat.mean_itl_ms),
    ("output_tokens_per_s", lat.output_tps_per_user),
)


def requests_csv(records: Sequence[RequestRecord]) -> bytes:
    names = [f.name for f in fields(RequestRecord)]
    header = [*names, *(n for n, _ in DERIVED)]
    rows = (
        [
            *(" ".join(map(str, r.itl_ns)) if n == "itl_ns" else getattr(r, n) for n in names),
            *(fn(r) for _, fn in DERIVED),
        ]
        for r in records
    )
    return _csv(header, rows)


def _table_csv(rows: Sequence[Mapping[str, Any]]) -> bytes:
    flat = [flatten(r) for r in rows]
    header: list[str] = []
    for r in flat:
        header += [k for k in r if k not in header]
    return _csv(header, ([r.get(k) for k in header] for r in flat))


def write_run_csv(summary: Summary, records: Sequence[RequestRecord], out_dir: Path) -> list[Path]:
    """The CSV files of one run in ``out_dir``; the paths written."""
    rollups = summary.rollups
    body = {k: v for k, v in summary.to_json().items() if k != "rollups"}
    files = {
        "summary.csv": _csv(["key", "value"], flatten(body).items()),
        "sessions.csv": _table_csv([r.to_json() for r in rollups.per_session]),
        "turns.csv": _table_csv([r.to_json() for r in rollups.per_turn_depth]),
        "time_series.csv": _table_csv([r.to_json() for r in rollups.time_series]),
    }
    if records:
        files["requests.csv"] = requests_csv(records)
    written = []
    for name, content in files.items():
        _write(out_dir / name, content)
        written.append(out_dir / name)
    return written


def write_sweep_csv(data: Sweep, out_dir: Path) -> list[Path]:
    path = out_dir / "sweep.csv"
    _write(path, _table_csv([p.to_json() for p in data.points]))
    return [path]


def write_trend_csv(data: Trend, out_dir: Path) -> list[Path]:
    path = out_dir / "trend.csv"
    _write(path, _table_csv([p.to_json() for p in data.points]))
    return [path]
