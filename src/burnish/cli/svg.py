"""Line charts as inline SVG text: axes, ticks, a legend, faint detail and bold means per series.

Drawn here rather than with a plotting library so the report needs nothing beyond burnish and
shows in any browser without network or scripts.
"""

from __future__ import annotations

import dataclasses
import math
from html import escape

__all__ = ["Series", "downsample", "line_chart", "nice_ticks"]

_WIDTH, _HEIGHT = 560, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 30, 44


@dataclasses.dataclass(frozen=True)
class Series:
    """One line of a chart.

    Attributes:
        label: The legend entry.
        color: A CSS color.
        points: `(x, y)` drawn bold with markers (e.g. epoch means).
        detail: `(x, y)` drawn as a thin faint line beneath (e.g. every iteration's value).
    """

    label: str
    color: str
    points: list[tuple[float, float]]
    detail: list[tuple[float, float]] = dataclasses.field(default_factory=list)


def line_chart(series: list[Series], x_max: float, *, x_label: str, title: str) -> str:
    """An `<svg>` element plotting `series` over `x` in `[0, x_max]`.

    Non-finite values are left out; a chart with no finite value says so instead of plotting.
    """
    values = [y for s in series for _, y in s.points + s.detail if math.isfinite(y)]
    parts = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<rect x="0" y="0" width="{_WIDTH}" height="{_HEIGHT}" fill="#ffffff"/>',
    ]
    if not values:
        parts.append(
            f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle" fill="#666">'
            "no finite values</text></svg>"
        )
        return "".join(parts)
    y_ticks = nice_ticks(min(values), max(values))
    x_ticks = [t for t in nice_ticks(0.0, max(x_max, 1.0), integers=True) if t <= x_max or t == 0]
    frame = _Frame(0.0, max(x_max, 1.0), y_ticks[0], y_ticks[-1])
    parts += _axes(frame, x_ticks, y_ticks, x_label)
    for s in series:
        detail = [(x, y) for x, y in downsample(s.detail) if math.isfinite(y)]
        if len(detail) > 1:
            parts.append(_polyline(frame, detail, s.color, 1.0, 'opacity="0.35"'))
        points = [(x, y) for x, y in s.points if math.isfinite(y)]
        if len(points) > 1:
            parts.append(_polyline(frame, points, s.color, 2.25, ""))
        parts += [
            f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="3.5" fill="{s.color}"/>'
            for x, y in points
        ]
    parts += _legend(series)
    parts.append("</svg>")
    return "".join(parts)


def nice_ticks(low: float, high: float, count: int = 5, integers: bool = False) -> list[float]:
    """Round tick values covering `[low, high]`: steps of 1, 2 or 5 times a power of ten."""
    if high == low:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    if integers:
        step = max(1.0, round(step))
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value < high + step * 0.999:
        ticks.append(round(value, 12))
        value += step
    return ticks


def downsample(points: list[tuple[float, float]], limit: int = 1200) -> list[tuple[float, float]]:
    """At most `limit` points: consecutive points averaged in equal groups (finite ones only)."""
    if len(points) <= limit:
        return points
    size = math.ceil(len(points) / limit)
    out = []
    for start in range(0, len(points), size):
        group = [(x, y) for x, y in points[start : start + size] if math.isfinite(y)]
        if group:
            out.append(
                (sum(x for x, _ in group) / len(group), sum(y for _, y in group) / len(group))
            )
    return out


@dataclasses.dataclass(frozen=True)
class _Frame:
    x_low: float
    x_high: float
    y_low: float
    y_high: float

    def x(self, value: float) -> float:
        return _LEFT + (value - self.x_low) / (self.x_high - self.x_low) * (_WIDTH - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        span = _HEIGHT - _TOP - _BOTTOM
        return _TOP + (1 - (value - self.y_low) / (self.y_high - self.y_low)) * span


def _axes(frame: _Frame, x_ticks: list[float], y_ticks: list[float], x_label: str) -> list[str]:
    left, right, top, bottom = _LEFT, _WIDTH - _RIGHT, _TOP, _HEIGHT - _BOTTOM
    parts = []
    for tick in y_ticks:
        y = frame.y(tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{_tick_label(tick)}</text>"
        )
    for tick in x_ticks:
        x = frame.x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" class="tick">'
            f"{_tick_label(tick)}</text>"
        )
    parts.append(
        f'<polyline points="{left},{top} {left},{bottom} {right},{bottom}" fill="none" '
        'stroke="#888"/>'
    )
    parts.append(
        f'<text x="{(left + right) / 2}" y="{_HEIGHT - 8}" text-anchor="middle" class="axis">'
        f"{escape(x_label)}</text>"
    )
    return parts


def _legend(series: list[Series]) -> list[str]:
    parts = []
    x = _WIDTH - _RIGHT
    for s in reversed(series):
        width = 28 + 7 * len(s.label)
        x -= width
        parts.append(
            f'<line x1="{x}" y1="14" x2="{x + 18}" y2="14" stroke="{s.color}" stroke-width="3"/>'
            f'<text x="{x + 22}" y="18" class="legend">{escape(s.label)}</text>'
        )
    return parts


def _polyline(
    frame: _Frame, points: list[tuple[float, float]], color: str, width: float, extra: str
) -> str:
    coords = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in points)
    return (
        f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width}" '
        f'stroke-linejoin="round" {extra}/>'
    )


def _tick_label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.6g}"
