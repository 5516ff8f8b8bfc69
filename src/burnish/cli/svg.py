"""Line charts as inline SVG text: axes, ticks, a legend, faint detail and bold means per series.

Drawn here rather than with a plotting library so the report needs nothing beyond burnish and
shows in any browser without network or scripts.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from html import escape

__all__ = [
    "Mark",
    "Series",
    "downsample",
    "legend_label",
    "line_chart",
    "nice_ticks",
    "text_width",
]

_WIDTH, _HEIGHT = 560, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 30, 44
_LEGEND_ROW = 18  # the height of a row of the legend
_LEGEND_LABEL = 420  # the widest label shown whole, in pixels (see `text_width`)
# Characters XML does not allow (control characters): shown as U+FFFD.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclasses.dataclass(frozen=True)
class Series:
    """One line of a chart.

    Attributes:
        label: The legend entry.
        color: A CSS color.
        points: `(x, y)` drawn bold with markers (e.g. epoch means).
        detail: `(x, y)` drawn as a thin faint line beneath (e.g. every iteration's value).
        markers: whether each of `points` gets a circle.
    """

    label: str
    color: str
    points: list[tuple[float, float]]
    detail: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    markers: bool = True  # a circle at each of `points`


@dataclasses.dataclass(frozen=True)
class Mark:
    """A vertical line across the plot at `x`, labelled at its top (e.g. a suggested value)."""

    x: float
    label: str
    color: str = "#c92a2a"


def line_chart(
    series: list[Series],
    x_max: float,
    *,
    x_label: str,
    title: str,
    x_min: float = 0.0,
    x_format: Callable[[float], str] | None = None,
    marks: Sequence[Mark] = (),
) -> str:
    """An `<svg>` element plotting `series` over `x` in `[x_min, x_max]` (integer x ticks;
    `x_format` writes their labels, e.g. `10^x` for a log axis), with `marks` drawn across.

    Total over any values: points with a non-finite coordinate are left out, a chart with no
    finite value says so instead of plotting, and a constant series gets a padded axis. The
    legend wraps onto as many rows as the labels need (the chart grows taller, the plot keeps
    its size); a label too long for a row is shortened with an ellipsis.
    """
    legend, rows = _legend(series)
    extra = _LEGEND_ROW * (rows - 1)
    height = _HEIGHT + extra
    values = [y for s in series for x, y in s.points + s.detail if _finite(x, y)]
    parts = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" '
        f'height="{height}" role="img" aria-label="{_xml(title)}">',
        f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="#ffffff"/>',
    ]
    if not values:
        parts.append(
            f'<text x="{_WIDTH / 2}" y="{height / 2}" text-anchor="middle" fill="#666">'
            "no finite values</text>"
        )
        return "".join([*parts, *legend, "</svg>"])
    x_low = x_min if math.isfinite(x_min) else 0.0
    x_high = x_max if math.isfinite(x_max) and x_max > x_low + 1.0 else x_low + 1.0
    y_ticks = nice_ticks(min(values), max(values))
    x_ticks = nice_ticks(x_low, x_high, integers=True)
    x_ticks = [t for t in x_ticks if x_low <= t <= x_high or t == x_ticks[0]]
    frame = _Frame(
        min(x_ticks[0], x_low), max(x_ticks[-1], x_high), y_ticks[0], y_ticks[-1], _TOP + extra
    )
    parts += _axes(frame, x_ticks, y_ticks, x_label, x_format)
    parts += [_mark(frame, mark) for mark in marks if math.isfinite(mark.x)]
    for s in series:
        detail = [(x, y) for x, y in downsample(s.detail) if _finite(x, y)]
        if len(detail) > 1:
            parts.append(_polyline(frame, detail, s.color, 1.0, 'opacity="0.35"'))
        points = [(x, y) for x, y in s.points if _finite(x, y)]
        if len(points) > 1:
            parts.append(_polyline(frame, points, s.color, 2.25, ""))
        parts += [
            f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="3.5" fill="{s.color}"/>'
            for x, y in (points if s.markers else [])
        ]
    parts += legend
    parts.append("</svg>")
    return "".join(parts)


def nice_ticks(low: float, high: float, count: int = 5, integers: bool = False) -> list[float]:
    """Round tick values covering `[low, high]`: steps of 1, 2 or 5 times a power of ten.

    Total over any bounds: in either order; non-finite ones are left out (`[0, 1]` when neither
    is finite); bounds closer than a billionth of their size (a constant series, or one that
    differs only by float rounding) are padded by 10% of their value (by 1 around 0). The ticks
    are at least two, strictly increasing, finite and at most `count + 3`.

    Example:
        >>> nice_ticks(0.1, 0.1 + 1e-17)
        [0.09, 0.095, 0.1, 0.105, 0.11]
    """
    low, high = _spread(*_finite_bounds(low, high))
    raw = high / count - low / count  # halved terms: no overflow, even across the float range
    exponent = math.floor(math.log10(raw))
    multiple = next(m for m in (1, 2, 5, 10) if m * 10.0**exponent >= raw)
    if integers and exponent < 0:
        multiple, exponent = 1, 0
    step = multiple * 10.0**exponent
    # A billionth of a step of slack: a bound on a tick stays that tick despite rounding.
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    # Each tick from its integer index (no running sum to drift or stall), as the nearest
    # float to its decimal value (0.3, not 0.30000000000000004).
    ticks = [float(f"{index * multiple}e{exponent}") for index in range(first, last + 1)]
    ticks = [min(max(t, -sys.float_info.max), sys.float_info.max) for t in ticks]
    return sorted(set(ticks)) if len(set(ticks)) > 1 else [low, high]


def _finite_bounds(low: float, high: float) -> tuple[float, float]:
    finite = [float(v) for v in (low, high) if math.isfinite(v)] or [0.0, 1.0]
    return min(finite), max(finite)


def _spread(low: float, high: float) -> tuple[float, float]:
    """`(low, high)`, widened around their middle when they are (nearly) equal.

    Spans below 1e-290 (far below any metric's precision) count as equal, and so do values
    below 1e-289 as zero, so the step computed from the span is a normal float.
    """
    if high - low > max(1e-9 * max(abs(low), abs(high)), 1e-290):
        return low, high
    middle = low / 2 + high / 2
    pad = abs(middle) * 0.1 if abs(middle) > 1e-289 else 1.0
    largest = sys.float_info.max
    return max(middle - pad, -largest), min(middle + pad, largest)


def _finite(x: float, y: float) -> bool:
    return math.isfinite(x) and math.isfinite(y)


def downsample(points: list[tuple[float, float]], limit: int = 1200) -> list[tuple[float, float]]:
    """At most `limit` points: consecutive points averaged in equal groups (finite ones only)."""
    if len(points) <= limit:
        return points
    size = math.ceil(len(points) / limit)
    out = []
    for start in range(0, len(points), size):
        group = [(x, y) for x, y in points[start : start + size] if math.isfinite(y)]
        if group:
            # Each term divided first: the mean of values near the float limit stays finite.
            out.append(
                (sum(x / len(group) for x, _ in group), sum(y / len(group) for _, y in group))
            )
    return out


@dataclasses.dataclass(frozen=True)
class _Frame:
    x_low: float
    x_high: float
    y_low: float
    y_high: float
    top: float = _TOP  # the plot's top edge (lower when the legend takes several rows)

    def x(self, value: float) -> float:
        return _LEFT + _fraction(value, self.x_low, self.x_high) * (_WIDTH - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        span = _HEIGHT - _TOP - _BOTTOM
        return self.top + (1 - _fraction(value, self.y_low, self.y_high)) * span

    @property
    def bottom(self) -> float:
        return self.top + _HEIGHT - _TOP - _BOTTOM


def _fraction(value: float, low: float, high: float) -> float:
    """Where `value` lies from `low` (0) to `high` (1); halved terms cannot overflow."""
    return (value / 2 - low / 2) / (high / 2 - low / 2)


def _axes(
    frame: _Frame,
    x_ticks: list[float],
    y_ticks: list[float],
    x_label: str,
    x_format: Callable[[float], str] | None = None,
) -> list[str]:
    left, right, top, bottom = _LEFT, _WIDTH - _RIGHT, frame.top, frame.bottom
    parts = []
    for tick, label in zip(y_ticks, _tick_labels(y_ticks)):
        y = frame.y(tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{label}</text>'
        )
    x_labels = [_xml(x_format(t)) for t in x_ticks] if x_format else _tick_labels(x_ticks)
    for tick, label in zip(x_ticks, x_labels):
        x = frame.x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#f0f0f0"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" class="tick">{label}</text>'
        )
    parts.append(
        f'<polyline points="{left},{top} {left},{bottom} {right},{bottom}" fill="none" '
        'stroke="#888"/>'
    )
    parts.append(
        f'<text x="{(left + right) / 2}" y="{bottom + _BOTTOM - 8}" text-anchor="middle" '
        'class="axis">'
        f"{_xml(x_label)}</text>"
    )
    return parts


def _legend(series: list[Series]) -> tuple[list[str], int]:
    """The legend's SVG parts and its number of rows: entries laid out from the right edge,
    in order, wrapping onto a new row when the row is full."""
    labels = [legend_label(s.label) for s in series]
    widths = [28 + text_width(label) for label in labels]
    rows: list[list[int]] = [[]]
    for index, width in enumerate(widths):
        used = sum(widths[i] for i in rows[-1])
        if rows[-1] and used + width > _WIDTH - _RIGHT - 8:
            rows.append([])
        rows[-1].append(index)
    parts = []
    for row, indices in enumerate(rows):
        x = _WIDTH - _RIGHT - sum(widths[i] for i in indices)
        y = 14 + _LEGEND_ROW * row
        for index in indices:
            parts.append(
                f'<line x1="{x}" y1="{y}" x2="{x + 18}" y2="{y}" stroke="{series[index].color}" '
                f'stroke-width="3"/><text x="{x + 22}" y="{y + 4}" class="legend">'
                f"{_xml(labels[index])}</text>"
            )
            x += widths[index]
    return parts, len(rows)


def legend_label(label: str) -> str:
    """`label` as the legend shows it, on one line (control characters as U+FFFD): whole, or
    its start and end around an ellipsis when wider than `_LEGEND_LABEL` pixels."""
    label = "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in label)
    if text_width(label) <= _LEGEND_LABEL:
        return label
    budget = (_LEGEND_LABEL - text_width("…")) // 2
    head, tail = _fitting(label, budget), _fitting(label[::-1], budget)[::-1]
    return head + "…" + tail


def text_width(text: str) -> int:
    """About how many pixels wide `text` is in the legend's 12px font: 7 a character, 14 for
    the wide ones (CJK, most emoji)."""
    return sum(14 if unicodedata.east_asian_width(c) in "WF" else 7 for c in text)


def _fitting(text: str, budget: int) -> str:
    """The longest start of `text` at most `budget` pixels wide."""
    used = 0
    for index, character in enumerate(text):
        used += text_width(character)
        if used > budget:
            return text[:index]
    return text


def _xml(text: str) -> str:
    """`text` escaped for XML, characters XML does not allow replaced."""
    return escape(_NOT_XML.sub("\ufffd", text))


def _mark(frame: _Frame, mark: Mark) -> str:
    """A dashed vertical line at `mark.x` (kept inside the plot) and its label above it."""
    x = frame.x(min(max(mark.x, frame.x_low), frame.x_high))
    anchor = "end" if x > _WIDTH / 2 else "start"
    shift = -4 if anchor == "end" else 4
    return (
        f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{frame.bottom}" '
        f'stroke="{mark.color}" stroke-width="1.5" stroke-dasharray="5,3"/>'
        f'<text x="{x + shift:.1f}" y="{frame.top + 12}" text-anchor="{anchor}" class="mark" '
        f'font-family="sans-serif" font-size="12" fill="{mark.color}">'
        f"{_xml(legend_label(mark.label))}</text>"
    )


def _polyline(
    frame: _Frame, points: list[tuple[float, float]], color: str, width: float, extra: str
) -> str:
    coords = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in points)
    return (
        f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width}" '
        f'stroke-linejoin="round" {extra}/>'
    )


def _tick_labels(ticks: list[float]) -> list[str]:
    """Short labels, with as many digits as it takes for distinct ticks to read distinct."""
    labels: list[str] = []
    for extra in range(16):
        labels = [_tick_label(tick, extra) for tick in ticks]
        if len(set(labels)) == len(labels):
            break
    return labels


def _tick_label(value: float, extra_digits: int = 0) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.{2 + extra_digits}g}"
    return f"{value:.{6 + extra_digits}g}"
