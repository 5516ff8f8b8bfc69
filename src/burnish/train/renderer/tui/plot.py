"""Braille line plots for the terminal (rich has no plot widget; Burn draws with braille too)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

__all__ = ["BrailleCanvas", "LinePlot", "PlotSeries"]

BRAILLE_BASE = 0x2800
# Dot bit of the braille cell for (column, row) of its 2x4 grid.
DOT_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
# _SPAN_MASKS[column][first][last]: the bits of rows first..last of one cell column.
_SPAN_MASKS = tuple(
    tuple(tuple(sum(bits[first : last + 1]) for last in range(4)) for first in range(4))
    for bits in DOT_BITS
)


class BrailleCanvas:
    """A grid of `width` x `height` character cells, each holding 2 x 4 dots.

    Args:
        width: Cells per row.
        height: Rows of cells.
    """

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self._bits = [[0] * width for _ in range(height)]
        self._styles: list[list[Style | None]] = [[None] * width for _ in range(height)]

    @property
    def dots(self) -> tuple[int, int]:
        """The dot resolution `(columns, rows)`."""
        return self.width * 2, self.height * 4

    def set(self, x: int, y: int, style: Style | None = None) -> None:
        """Light dot `(x, y)` (y down from the top); dots outside the canvas are ignored."""
        if 0 <= x < self.width * 2 and 0 <= y < self.height * 4:
            row, col = y // 4, x // 2
            self._bits[row][col] |= DOT_BITS[x % 2][y % 4]
            if style is not None:
                self._styles[row][col] = style

    def line(self, x0: int, y0: int, x1: int, y1: int, style: Style | None = None) -> None:
        """Light the dots of the segment from `(x0, y0)` to `(x1, y1)` (Bresenham)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        step_x, step_y = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        while True:
            self.set(x0, y0, style)
            if x0 == x1 and y0 == y1:
                return
            doubled = 2 * error
            if doubled >= dy:
                error += dy
                x0 += step_x
            if doubled <= dx:
                error += dx
                y0 += step_y

    def span(self, x: int, y0: int, y1: int, style: Style | None = None) -> None:
        """Light the dots of column `x` from row `y0` to row `y1` (inclusive), a cell at a time."""
        if not 0 <= x < self.width * 2:
            return
        low, high = max(min(y0, y1), 0), min(max(y0, y1), self.height * 4 - 1)
        col, masks = x // 2, _SPAN_MASKS[x % 2]
        for row in range(low // 4, high // 4 + 1):
            first, last = max(low - 4 * row, 0), min(high - 4 * row, 3)
            self._bits[row][col] |= masks[first][last]
            if style is not None:
                self._styles[row][col] = style

    def rows(self) -> list[Text]:
        """One `Text` per row; a cell without dots is a space."""
        lines = []
        for bits, styles in zip(self._bits, self._styles):
            text = Text("".join(chr(BRAILLE_BASE + bit) if bit else " " for bit in bits))
            start = 0
            for end in range(1, len(bits) + 1):
                if end == len(bits) or styles[end] is not styles[start] or not bits[end]:
                    style = styles[start]
                    if bits[start] and style is not None:
                        text.stylize(style, start, end)
                    start = end
            lines.append(text)
        return lines


@dataclass(frozen=True)
class PlotSeries:
    """One line of a plot: a label for the legend, its points and its style."""

    label: str
    points: Sequence[tuple[float, float]]
    style: str = "default"


def _bounds(values: list[float], pad: float) -> tuple[float, float]:
    """Bounds around the finite `values` with `pad` of their span as margin.

    Total: no finite value gives `(0, 1)`; values closer than a billionth of their size (a
    constant, or a series that differs only by float rounding) are spread by 5% of their value
    (0.5 around zero); nothing overflows, even at the ends of the float range.
    """
    finite = [value for value in values if math.isfinite(value)] or [0.0, 1.0]
    low, high = min(finite), max(finite)
    largest = sys.float_info.max
    if high - low <= max(1e-9 * max(abs(low), abs(high)), 1e-290):
        middle = low / 2 + high / 2
        spread = abs(middle) * 0.05 if abs(middle) > 1e-289 else 0.5
        return max(middle - spread, -largest), min(middle + spread, largest)
    margin = (high / 2 - low / 2) * 2 * pad  # halved: the span itself may overflow
    return max(low - margin, -largest), min(high + margin, largest)


def _fraction(value: float, low: float, high: float) -> float:
    """Where `value` lies from `low` (0) to `high` (1), clamped to [-1, 2]: a point far off
    the plot (a fixed x range) draws a line towards it without walking millions of dots."""
    span = high / 2 - low / 2
    fraction = (value / 2 - low / 2) / span if span > 0 else 0.5
    return min(max(fraction, -1.0), 2.0)


def _label(value: float) -> str:
    return f"{value:.4g}"


class LinePlot:
    """A rich renderable drawing series as braille lines with axes and a legend.

    It fills the width and height rich gives it (`height` when rich gives none).

    Args:
        series: The lines to draw, in legend order.
        x_label: The caption of the x axis.
        x_range: Fixed x bounds, or None to fit the data.
        height: Rows used when the container does not set a height.
    """

    def __init__(
        self,
        series: Sequence[PlotSeries],
        x_label: str = "",
        x_range: tuple[float, float] | None = None,
        height: int = 12,
    ) -> None:
        self.series = [s for s in series if s.points]
        self.x_label = x_label
        self.x_range = x_range
        self.height = height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width, height = options.max_width, options.height or self.height
        for line in self.lines(width, height):
            yield from line.render(console)
            yield Segment.line()

    def lines(self, width: int, height: int) -> list[Text]:
        """The plot as `height` lines of at most `width` cells."""
        if not self.series:
            return [Text("waiting for values...", style="dim")] + [Text()] * (height - 1)
        points = [
            (x, y)
            for s in self.series
            for x, y in s.points
            if math.isfinite(x) and math.isfinite(y)
        ]
        y_low, y_high = _bounds([y for _, y in points], pad=0.05)
        x_low, x_high = _bounds(list(self.x_range or [x for x, _ in points]), pad=0.0)
        y_labels = [_label(y_high), _label(y_low / 2 + y_high / 2), _label(y_low)]
        gutter = max(map(len, y_labels)) + 1
        plot_width, plot_height = width - gutter - 1, height - 3
        if plot_width < 4 or plot_height < 2:
            return [Text("(too small to plot)", style="dim")] + [Text()] * (height - 1)
        canvas = BrailleCanvas(plot_width, plot_height)
        for series in self.series:
            _draw(canvas, series, (x_low, x_high), (y_low, y_high))
        label_rows = {0: y_labels[0], plot_height // 2: y_labels[1], plot_height - 1: y_labels[2]}
        lines = []
        for index, row in enumerate(canvas.rows()):
            label = label_rows.get(index)
            axis = Text(f"{label or '':>{gutter - 1}} " + ("┤" if label else "│"), style="dim")
            lines.append(axis + row)
        lines.append(Text(" " * gutter + "└" + "─" * plot_width, style="dim"))
        left, right = _label(x_low), _label(x_high)
        caption = self.x_label.center(max(0, plot_width - len(left) - len(right)))
        lines.append(Text(" " * (gutter + 1) + left + caption + right, style="dim"))
        legend = Text(" " * (gutter + 1))
        for series in self.series:
            legend.append("━━ ", style=series.style).append(series.label + "   ")
        lines.append(legend)
        return lines


def _draw(
    canvas: BrailleCanvas,
    series: PlotSeries,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
) -> None:
    """Draw `series` as a line; points sharing a dot column become one vertical span.

    The work is bounded by the canvas size, not by the number of points.
    """
    columns, rows = canvas.dots
    style = Style.parse(series.style)
    spans: list[list[int]] = []  # [x, first y, low y, high y, last y]; None-free runs
    breaks: set[int] = set()  # indices of spans that start a new run (after a non-finite value)
    for x, y in series.points:
        if not (math.isfinite(x) and math.isfinite(y)):
            breaks.add(len(spans))
            continue
        dot_x = round(_fraction(x, *x_range) * (columns - 1))
        dot_y = round((1 - _fraction(y, *y_range)) * (rows - 1))
        if spans and spans[-1][0] == dot_x and len(spans) not in breaks:
            span = spans[-1]
            span[2], span[3], span[4] = min(span[2], dot_y), max(span[3], dot_y), dot_y
        else:
            spans.append([dot_x, dot_y, dot_y, dot_y, dot_y])
    for index, (dot_x, first, low, high, _) in enumerate(spans):
        previous = spans[index - 1] if index and index not in breaks else None
        if previous is not None and abs(previous[0] - dot_x) == 1:
            low, high = min(low, previous[4]), max(high, previous[4])
        elif previous is not None:
            canvas.line(previous[0], previous[4], dot_x, first, style)
        canvas.span(dot_x, low, high, style)
