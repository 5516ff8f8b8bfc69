"""The report's learning-rate finder section: `lr_finder.json`'s smoothed loss against the rate
(log axis), the suggestion marked; alone on the page for a directory that has not trained yet."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from burnish.cli.html import document, number
from burnish.cli.svg import Mark, Series, line_chart
from burnish.errors import RecordError
from burnish.tune.lr_finder_result import LR_FINDER_FILE, LrFinderResult

__all__ = ["lr_finder_page", "lr_finder_section", "read_lr_finder"]

COLOR = "#2f9e44"


def read_lr_finder(directory: Path) -> tuple[LrFinderResult | None, str | None]:
    """`directory/lr_finder.json` read, and None; None and why it could not be read; or
    (None, None) when there is none."""
    path = directory / LR_FINDER_FILE
    if not path.is_file():
        return None, None
    try:
        return LrFinderResult.load(path), None
    except (OSError, RecordError) as error:
        return None, f"{LR_FINDER_FILE} could not be read: {error}"


def lr_finder_section(result: LrFinderResult | None, note: str | None) -> str:
    """The section's HTML: the chart and what the sweep found, or the note."""
    heading = "<h2>Learning-rate finder</h2>"
    if result is None:
        return heading + f'<p class="note">{escape(note or "No " + LR_FINDER_FILE + ".")}</p>'
    suggestion = result.suggestion()
    return (
        heading
        + '<div class="charts"><div class="card"><h3>Smoothed loss by learning rate</h3>'
        + _chart(result, suggestion)
        + f'<p class="last">{escape(_findings(result, suggestion))}</p></div></div>'
    )


def lr_finder_page(directory: Path) -> str:
    """A page with the finder's section only (a run directory with no metric logs yet)."""
    result, note = read_lr_finder(directory)
    name = directory.resolve().name or str(directory)
    return document(
        f"burnish report: {name}",
        f"<h1>Run report: {escape(name)}</h1>"
        f'<p class="meta">{escape(str(directory.resolve()))} · no metric logs yet (the run has '
        "not trained): the learning-rate finder only</p>" + lr_finder_section(result, note),
    )


def _chart(result: LrFinderResult, suggestion: float | None) -> str:
    """The smoothed loss over `log10(lr)`; a sweep's diverging last point is left out (it
    would flatten the rest; the text below names it)."""
    end = len(result.lrs) - 1 if result.stopped_early else len(result.lrs)
    points = [(math.log10(lr), y) for lr, y in zip(result.lrs[:end], result.smoothed[:end])]
    series = [Series("smoothed loss", COLOR, points, markers=False)]
    marks = (
        [] if suggestion is None else [Mark(math.log10(suggestion), f"suggestion {suggestion:.2e}")]
    )
    low, high = (points[0][0], points[-1][0]) if points else (0.0, 1.0)
    return line_chart(
        series, high, x_min=low, x_label="learning rate (log scale)",
        title="Smoothed loss by learning rate", x_format=_power_of_ten, marks=marks,
    )  # fmt: skip


def _findings(result: LrFinderResult, suggestion: float | None) -> str:
    found = (
        f"Suggestion: {suggestion:.3g} (where the smoothed loss falls fastest)"
        if suggestion is not None
        else "No suggestion: the smoothed loss falls nowhere among the points kept"
    )
    points = f"{len(result.lrs)} of {result.num_iterations} iterations"
    if result.stopped_early and result.lrs:
        stop = (
            f"stopped at lr {result.lrs[-1]:.3g}, where the smoothed loss "
            f"({number(result.smoothed[-1])}) diverged (not drawn)"
        )
    else:
        stop = "no divergence"
    return f"{found} · {points}, {stop} · smoothing beta {result.beta:g}."


def _power_of_ten(exponent: float) -> str:
    return f"1e{exponent:g}"
