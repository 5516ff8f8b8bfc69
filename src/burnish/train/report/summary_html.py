"""The LearnerSummary as an HTML table, for notebooks (`LearnerSummary._repr_html_`)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from burnish.train.renderer.base import printable
from burnish.train.report.summary_format import format_value

if TYPE_CHECKING:
    from burnish.train.report.summary import LearnerSummary, MetricSummary

__all__ = ["summary_html"]

_HEADER = ("Split", "Metric", "Min.", "Epoch", "Max.", "Epoch")


def summary_html(summary: LearnerSummary) -> str:
    """The summary's table (the rows of `str(summary)`) as an HTML `<table>`.

    Example:
        >>> from burnish.train.report.summary import (
        ...     LearnerSummary, MetricSummary, MetricSummaryEntry, SummaryMetrics)
        >>> loss = MetricSummary("Loss", [MetricSummaryEntry(1, 0.5), MetricSummaryEntry(2, 0.25)])
        >>> table = summary_html(LearnerSummary(2, SummaryMetrics([loss], [])))
        >>> "<td>Train</td><td>Loss</td><td>0.250</td><td>2</td><td>0.500</td><td>1</td>" in table
        True
    """
    head = "".join(f"<th>{name}</th>" for name in _HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(printable(cell))}</td>" for cell in row) + "</tr>"
        for row in _rows(summary)
    )
    model = "" if summary.model is None else f"<pre>{html.escape(summary.model)}</pre>"
    return (
        '<div class="burnish-summary">'
        f"<strong>Learner Summary</strong> · Total Epochs: {summary.epochs}{model}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _rows(summary: LearnerSummary) -> list[tuple[str, str, str, str, str, str]]:
    tests = {f"Test ({tag})": metrics for tag, metrics in sorted(summary.metrics.test.items())}
    splits: list[tuple[str, list[MetricSummary]]] = [
        ("Train", summary.metrics.train),
        ("Valid", summary.metrics.valid),
        *tests.items(),
    ]
    rows = []
    for split, metrics in splits:
        for metric in metrics:
            if not metric.entries:
                continue
            low, high = metric.min, metric.max
            test = split.startswith("Test")  # one value, no epochs
            rows.append(
                (
                    split,
                    metric.name,
                    _value(low.value),
                    "-" if test else str(low.step),
                    _value(high.value),
                    "-" if test else str(high.step),
                )
            )
    return rows


def _value(value: float) -> str:
    """As the text table writes it (Burn's `fmt_val`), without its padding."""
    return format_value(value).strip()
