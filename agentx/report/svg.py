"""Small inline-SVG charts for the HTML report: line charts, grouped bars, a stacked share bar.

No plotting library and no external assets: each function returns one ``<svg>`` string that
renders on its own (text escaped, sizes in user units, ``viewBox`` so it scales with the page).
Unknown values (``None``) break a line or leave a bar out; they are never drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2")
Fmt = Callable[[float], str]


def _g(v: float) -> str:
    return f"{v:g}"


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float | None]]
    color: str = PALETTE[0]


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
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 12))
    return ticks


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width / 2:g}" y="16" class="ct">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _legend(names: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for name, color in names:
        out.append(f'<rect x="{x:g}" y="{y - 8:g}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:g}" y="{y + 1:g}" class="lg">{escape(name)}</text>')
        x += 28 + 6.2 * len(name)  # ~11 px sans-serif
    return out


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
) -> str:
    """Lines over a shared x axis; points with ``None`` y break the line.

    ``y_format`` labels values in tooltips, ``tick_format`` the axis (round numbers),
    ``x_format`` the x ticks and tooltips (e.g. ``lambda v: f"{10**v:g}"`` for a log axis).
    """
    left, right, top, bottom = 62, 16, 30, 58
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if y is not None]
    if not xs or not ys:
        return _svg(width, 60, ['<text x="10" y="44" class="lg">no data</text>'], title)
    x0, x1 = min(xs), max(xs)
    x_ticks = [t for t in nice_ticks(x0, x1) if x0 <= t <= x1] or [x0]
    y_ticks = nice_ticks(0.0, y_max if y_max is not None else max(ys))
    y1 = y_ticks[-1]

    def px(x: float) -> float:
        return left + (x - x0) / ((x1 - x0) or 1) * pw

    def py(y: float) -> float:
        return top + ph - y / (y1 or 1) * ph

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
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" class="ax"/>')
    body.append(
        f'<text x="{left + pw / 2:g}" y="{top + ph + 32}" class="al">{escape(x_label)}</text>'
    )
    body.append(
        f'<text x="14" y="{top + ph / 2:g}" class="al" '
        f'transform="rotate(-90 14 {top + ph / 2:g})">{escape(y_label)}</text>'
    )
    for s in series:
        segments: list[list[tuple[float, float]]] = [[]]
        for x, y in s.points:
            if y is None:
                if segments[-1]:
                    segments.append([])
                continue
            segments[-1].append((px(x), py(y)))
        for seg in segments:
            if len(seg) > 1:
                pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in seg)
                body.append(
                    f'<polyline points="{pts}" fill="none" stroke="{s.color}" stroke-width="1.8"/>'
                )
        if len(s.points) <= 120:
            for x, y in s.points:
                if y is not None:
                    tip = f"{s.name}: {x_format(x)} -> {y_format(y)}"
                    body.append(
                        f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{s.color}">'
                        f"<title>{escape(tip)}</title></circle>"
                    )
    body += _legend([(s.name, s.color) for s in series], left, height - 8)
    return _svg(width, height, body, title)


def bar_chart(
    groups: Sequence[tuple[str, Sequence[tuple[str, float | None]]]],
    *,
    title: str,
    y_format: Fmt = _g,
    tick_format: Fmt = _g,
    width: int = 300,
    height: int = 200,
) -> str:
    """Grouped bars (e.g. p50/p90/p99 per metric) on one linear scale from 0."""
    left, right, top, bottom = 58, 10, 30, 44
    pw, ph = width - left - right, height - top - bottom
    vals = [v for _, bars in groups for _, v in bars if v is not None]
    if not vals:
        return _svg(width, 60, ['<text x="10" y="44" class="lg">no data</text>'], title)
    ticks = nice_ticks(0.0, max(vals))
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
    body += _legend([(n, PALETTE[i % len(PALETTE)]) for i, n in enumerate(names)], left, height - 8)
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
            (f"{label} {100 * f:.1f}%", PALETTE[i % len(PALETTE)])
            for i, (label, f) in enumerate(parts)
        ],
        left,
        62,
    )
    return _svg(width, height, body, title)
