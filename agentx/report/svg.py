"""Small inline-SVG charts for the HTML report: line charts, grouped bars, a stacked share bar.

No plotting library and no external assets: each function returns one ``<svg>`` string that
renders on its own (text escaped, sizes in user units, ``viewBox`` so it scales with the page).
Unknown values (``None``) break a line or leave a bar out; they are never drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from html import escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2")
# the charts' classes: title, x/y ticks, axis labels, legend, point labels, grid, axis
CHART_CSS = (
    ".ct{font-size:13px;font-weight:600;text-anchor:middle}"
    ".xt{font-size:11px;text-anchor:middle;fill:#374151}"
    ".yt{font-size:11px;text-anchor:end;fill:#374151}"
    ".al{font-size:11px;text-anchor:middle;fill:#6b7280}.lg{font-size:11px;fill:#374151}"
    ".pl{font-size:10px;fill:#374151}.gr{stroke:#e5e7eb}.ax{stroke:#9ca3af}"
)
Fmt = Callable[[float], str]


def _g(v: float) -> str:
    return f"{v:g}"


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float | None]]
    color: str = PALETTE[0]
    labels: Sequence[str] | None = None  # text drawn beside each point (e.g. "c4")
    dash: bool = False
    markers: bool = True  # dots with a tooltip on each point (up to MAX_MARKERS)

    @property
    def visible(self) -> bool:
        return any(y is not None for _, y in self.points)


MAX_MARKERS = 120


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]`` (1-2-2.5-5 steps)."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v < hi + step * 1e-9:
        ticks.append(round(v, 12) + 0.0)  # + 0.0: never a "-0" tick
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 12) + 0.0)
    return ticks


def integer_ticks(lo: float, hi: float, n: int = 8) -> list[float]:
    """Whole-number ticks within ``[lo, hi]`` (steps 1, 2, 5, 10, ...): turn depths, counts."""
    ticks = [t for t in nice_ticks(lo, hi, n) if lo <= t <= hi]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if step < 1 or any(t != int(t) for t in ticks):
        first, last = math.ceil(lo), math.floor(hi)
        every = max(1, math.ceil((last - first + 1) / n))
        ticks = [float(t) for t in range(first, last + 1, every)]
    return ticks or [float(round(lo))]


def whole_ticks(hi: float, n: int = 5) -> list[float]:
    """Ticks from 0 covering ``hi`` in whole steps (1, 2, 5, 10, ...): counts of things."""
    if not math.isfinite(hi) or hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * mag for m in (1, 2, 5, 10) if raw <= m * mag)
    return [float(step * k) for k in range(math.ceil(hi / step - 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis over ``[lo, hi]`` (both > 0): 1-2-5 per decade, thinned to ~8."""
    if lo <= 0 or hi <= 0 or not (math.isfinite(lo) and math.isfinite(hi)):
        return [1.0]
    out: list[float] = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            t = m * 10.0**e
            if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9):
                out.append(t)
    if len(out) > 8:
        out = [t for t in out if f"{t:e}".startswith("1")] or out
    if len(out) < 2:
        out = [lo, hi]
    return out


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width / 2:g}" y="16" class="ct">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _legend_rows(names: Sequence[tuple[str, str, bool]], x0: float, width: float) -> int:
    rows, x = 1, x0
    for name, _, _ in names:
        w = 28 + 6.2 * len(name)  # ~11 px sans-serif
        if x > x0 and x + w > width:
            rows, x = rows + 1, x0
        x += w
    return rows


def _legend(names: Sequence[tuple[str, str, bool]], x0: float, y: float, width: float) -> list[str]:
    """Swatches and names from ``y`` down, wrapping at ``width``; ``(name, color, dashed)``."""
    out = []
    x = x0
    for name, color, dash in names:
        w = 28 + 6.2 * len(name)
        if x > x0 and x + w > width:
            x, y = x0, y + 15
        if dash:
            out.append(
                f'<line x1="{x:g}" x2="{x + 10:g}" y1="{y - 3:g}" y2="{y - 3:g}" stroke="{color}" '
                'stroke-width="2" stroke-dasharray="3 2"/>'
            )
        else:
            out.append(f'<rect x="{x:g}" y="{y - 8:g}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:g}" y="{y + 1:g}" class="lg">{escape(name)}</text>')
        x += w
    return out


def no_data(title: str, width: int = 320) -> str:
    return _svg(width, 60, ['<text x="10" y="44" class="lg">no data</text>'], title)


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    y_format: Fmt = _g,
    tick_format: Fmt = _g,
    y_max: float | None = None,
    width: int = 640,
    height: int = 260,
    x_format: Fmt = _g,
    x_integer: bool = False,
    log_x: bool = False,
    x_ticks: Sequence[float] | None = None,
) -> str:
    """Lines over a shared x axis; points with ``None`` y break the line.

    ``y_format`` labels values in tooltips, ``tick_format`` the axis (round numbers),
    ``x_format`` the x ticks and tooltips. ``x_integer``: whole-number x ticks (turn depths).
    ``log_x``: a log x axis (points with x <= 0 are left out). ``x_ticks``: the x ticks to draw
    (e.g. a sweep's concurrency levels) instead of computed ones. Only series with a point to draw
    get a legend entry; a chart with none says "no data".
    """
    shown = [s for s in series if s.visible]
    if log_x:
        shown = [s for s in map(_positive_x, shown) if s.visible]
    xs = [x for s in shown for x, y in s.points if y is not None]
    ys = [y for s in shown for _, y in s.points if y is not None]
    if not xs or not ys:
        return no_data(title, min(width, 320))
    legend = [(s.name, s.color, s.dash) for s in shown]
    left, right, top = 62, 16, 30
    rows = _legend_rows(legend, left, width - right)  # where _legend wraps
    bottom = 44 + 15 * rows
    height += 15 * (rows - 1)
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = min(xs), max(xs)
    tx: Callable[[float], float] = math.log10 if log_x else (lambda v: v)
    if x_ticks is not None:
        x_ticks = [t for t in x_ticks if x0 <= t <= x1] or [x0]
    elif log_x:
        x_ticks = log_ticks(x0, x1)
    elif x_integer:
        x_ticks = integer_ticks(x0, x1)
    else:
        x_ticks = [t for t in nice_ticks(x0, x1) if x0 <= t <= x1] or [x0]
    y_ticks = nice_ticks(min(0.0, min(ys)), y_max if y_max is not None else max(ys))
    y0, y1 = y_ticks[0], y_ticks[-1]
    lx0, lx1 = tx(x0), tx(x1)

    def px(x: float) -> float:
        return left + (tx(x) - lx0) / ((lx1 - lx0) or 1) * pw

    def py(y: float) -> float:
        return top + ph - (y - y0) / ((y1 - y0) or 1) * ph

    body = []
    for t in y_ticks:
        body.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" class="gr"/>'
        )
        body.append(
            f'<text x="{left - 6}" y="{py(t) + 4:.1f}" class="yt">{escape(tick_format(t))}</text>'
        )
    for t in x_ticks:
        body.append(
            f'<text x="{px(t):.1f}" y="{top + ph + 16}" class="xt">{escape(x_format(t))}</text>'
        )
    axis_y = py(0.0) if y0 < 0 else top + ph
    body.append(
        f'<line x1="{left}" x2="{left + pw}" y1="{axis_y:.1f}" y2="{axis_y:.1f}" class="ax"/>'
    )
    body.append(
        f'<text x="{left + pw / 2:g}" y="{top + ph + 32}" class="al">{escape(x_label)}</text>'
    )
    body.append(
        f'<text x="14" y="{top + ph / 2:g}" class="al" '
        f'transform="rotate(-90 14 {top + ph / 2:g})">{escape(y_label)}</text>'
    )
    for s in shown:
        body += _series(s, px, py, x_format, y_format, left + pw)
    body += _legend(legend, left, top + ph + 50, width - right)
    return _svg(width, height, body, title)


def _positive_x(s: Series) -> Series:
    keep = [i for i, (x, _) in enumerate(s.points) if x > 0]
    labels = None if s.labels is None else [s.labels[i] for i in keep if i < len(s.labels)]
    return replace(s, points=[s.points[i] for i in keep], labels=labels)


def _series(
    s: Series,
    px: Callable[[float], float],
    py: Callable[[float], float],
    x_format: Fmt,
    y_format: Fmt,
    x_right: float,
) -> list[str]:
    body = []
    segments: list[list[tuple[float, float]]] = [[]]
    for x, y in s.points:
        if y is None:
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append((px(x), py(y)))
    dash = ' stroke-dasharray="6 4"' if s.dash else ""
    for seg in segments:
        if len(seg) > 1:
            pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in seg)
            body.append(
                f'<polyline points="{pts}" fill="none" stroke="{s.color}" stroke-width="1.8"{dash}/>'
            )
    lone = {seg[0] for seg in segments if len(seg) == 1}  # a point with no line: always a dot
    for i, (x, y) in enumerate(s.points):
        if y is None:
            continue
        cx, cy = px(x), py(y)
        if (s.markers and len(s.points) <= MAX_MARKERS) or (cx, cy) in lone:
            tip = f"{s.name}: {x_format(x)} -> {y_format(y)}"
            body.append(
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.5" fill="{s.color}">'
                f"<title>{escape(tip)}</title></circle>"
            )
        if s.labels is not None and i < len(s.labels) and s.labels[i]:
            near_edge = cx > x_right - 24  # put the label left of the point
            anchor = ' text-anchor="end"' if near_edge else ""
            lx = cx - 5 if near_edge else cx + 5
            body.append(
                f'<text x="{lx:.1f}" y="{cy - 6:.1f}" class="pl"{anchor}>'
                f"{escape(s.labels[i])}</text>"
            )
    return body


def bar_chart(
    groups: Sequence[tuple[str, Sequence[tuple[str, float | None]]]],
    *,
    title: str,
    y_format: Fmt = _g,
    tick_format: Fmt = _g,
    width: int = 300,
    height: int = 200,
    y_integer: bool = False,
) -> str:
    """Grouped bars (e.g. p50/p90/p99 per metric) on one linear scale from 0; ``y_integer``:
    whole-number ticks (counts)."""
    left, right, top, bottom = 58, 10, 30, 44
    pw, ph = width - left - right, height - top - bottom
    vals = [v for _, bars in groups for _, v in bars if v is not None]
    if not vals:
        return no_data(title, width)
    ticks = whole_ticks(max(vals)) if y_integer else nice_ticks(0.0, max(vals))
    top_v = ticks[-1] or 1.0
    body = []
    for t in ticks:
        y = top + ph - t / top_v * ph
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="gr"/>')
        body.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" class="yt">{escape(tick_format(t))}</text>'
        )
    gw = pw / len(groups)
    names: list[str] = []
    for gi, (label, bars) in enumerate(groups):
        bw = gw * 0.8 / max(len(bars), 1)
        for bi, (name, v) in enumerate(bars):
            if name not in names:
                names.append(name)
            if v is None:
                continue
            color = PALETTE[names.index(name) % len(PALETTE)]
            h = v / top_v * ph
            x = left + gi * gw + gw * 0.1 + bi * bw
            body.append(
                f'<rect x="{x:.1f}" y="{top + ph - h:.1f}" width="{bw * 0.92:.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{escape(f"{label} {name}: {y_format(v)}")}'
                "</title></rect>"
            )
        body.append(
            f'<text x="{left + gi * gw + gw / 2:.1f}" y="{top + ph + 15}" class="xt">{escape(label)}</text>'
        )
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" class="ax"/>')
    body += _legend(
        [(n, PALETTE[i % len(PALETTE)], False) for i, n in enumerate(names)],
        left,
        height - 8,
        width,
    )
    return _svg(width, height, body, title)


def share_bar(parts: Sequence[tuple[str, float]], *, title: str, width: int = 640) -> str:
    """One horizontal bar split into labelled shares (fractions of 1)."""
    height, left, bar_w = 70, 10, width - 20
    body = []
    x = float(left)
    total = sum(max(f, 0.0) for _, f in parts) or 1.0
    for i, (label, f) in enumerate(parts):
        w = max(f, 0.0) / total * bar_w
        color = PALETTE[i % len(PALETTE)]
        tip = escape(f"{label}: {100 * f:.1f}%")
        body.append(
            f'<rect x="{x:.1f}" y="24" width="{w:.1f}" height="20" fill="{color}"><title>{tip}</title></rect>'
        )
        x += w
    body += _legend(
        [
            (f"{label} {100 * f:.1f}%", PALETTE[i % len(PALETTE)], False)
            for i, (label, f) in enumerate(parts)
        ],
        left,
        62,
        width,
    )
    return _svg(width, height, body, title)
