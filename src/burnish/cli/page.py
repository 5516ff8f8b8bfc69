"""The HTML of `burnish report`: one file, inline CSS and SVG, no script, nothing fetched."""

from __future__ import annotations

import datetime
import math
from html import escape
from typing import Any

from burnish import __version__
from burnish.cli.base import format_bytes
from burnish.cli.report import SPLITS, MetricCurves, RunReport
from burnish.cli.svg import Series, line_chart

__all__ = ["render_page"]

COLORS = {"train": "#1f77b4", "valid": "#e8590c"}

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 0 auto; max-width: 1200px; padding: 24px; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; } h3 { font-size: 15px; margin: 0 0 6px; }
.meta { color: #666; margin: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(580px, 1fr)); gap: 16px; }
.card { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 12px; }
.chart { max-width: 100%; height: auto; display: block; }
.chart .tick { font: 11px sans-serif; fill: #555; }
.chart .axis { font: 12px sans-serif; fill: #333; }
.chart .legend { font: 12px sans-serif; fill: #222; }
.last { color: #555; font-size: 13px; margin: 6px 0 0; }
table { border-collapse: collapse; background: #fff; } th, td { border: 1px solid #ddd;
        padding: 4px 10px; text-align: left; } th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 12px;
      overflow-x: auto; font-size: 13px; }
.note { color: #777; font-style: italic; }
footer { color: #888; font-size: 12px; margin-top: 32px; }
"""


def render_page(report: RunReport) -> str:
    """The whole page for `report`."""
    name = report.directory.resolve().name or str(report.directory)
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    sections = [
        _metrics(report),
        _summary(report.summary),
        _model(report),
        _config(report.config),
        _checkpoints(report),
        _files(report.files),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>burnish report: {escape(name)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Run report: {escape(name)}</h1>"
        f'<p class="meta">{escape(str(report.directory.resolve()))} · '
        f"{report.summary.epochs} epoch{'s' if report.summary.epochs != 1 else ''} logged</p>"
        + "".join(sections)
        + f"<footer>Written by burnish {escape(__version__)} on {escape(now)}. "
        "This page is self-contained: no scripts, nothing loaded from the network.</footer>"
        "</body></html>\n"
    )


def _metrics(report: RunReport) -> str:
    cards = "".join(_metric_card(curves, report.summary.epochs) for curves in report.curves)
    return (
        '<h2>Metrics</h2><p class="meta">Bold: the epoch means (the learner summary\'s '
        "values); faint: every iteration's value.</p>"
        f'<div class="charts">{cards}</div>'
    )


def _metric_card(curves: MetricCurves, epochs: int) -> str:
    series = [
        Series(split, COLORS[split], curves.means[split], curves.iterations[split])
        for split in SPLITS
        if curves.means[split] or curves.iterations[split]
    ]
    chart = line_chart(series, float(epochs), x_label="epoch", title=curves.name)
    last = " · ".join(
        f"{split} {_number(curves.means[split][-1][1])} ({curves.last[split]})"
        for split in SPLITS
        if curves.means[split]
    )
    return (
        f'<div class="card"><h3>{escape(curves.name)}</h3>{chart}'
        f'<p class="last">Last epoch mean: {escape(last)}</p></div>'
    )


def _summary(summary: Any) -> str:
    rows = []
    for split, metrics in (("Train", summary.metrics.train), ("Valid", summary.metrics.valid)):
        for metric in metrics:
            low, high, last = metric.min, metric.max, metric.entries[-1]
            rows.append(
                [escape(split), escape(metric.name), _number(low.value), str(low.step),
                 _number(high.value), str(high.step), _number(last.value)]
            )  # fmt: skip
    header = ["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch", "Last"]
    return "<h2>Learner summary</h2>" + _table(header, rows, numeric={2, 3, 4, 5, 6})


def _model(report: RunReport) -> str:
    if report.model is None:
        why = report.model_source or "no model record (model.* or a checkpoint's) was found"
        return f'<h2>Model</h2><p class="note">{escape(why)}</p>'
    return (
        f'<h2>Model</h2><p class="meta">From {escape(report.model_source or "")}</p>'
        f"<pre>{escape(report.model)}</pre>"
    )


def _config(config: str | None) -> str:
    if config is None:
        return (
            '<h2>Config</h2><p class="note">No config.json in the artifact directory (save one '
            'with config.save(f"{artifact_dir}/config.json")).</p>'
        )
    return f"<h2>Config</h2><pre>{escape(config)}</pre>"


def _checkpoints(report: RunReport) -> str:
    if not report.checkpoints:
        return '<h2>Checkpoints</h2><p class="note">No checkpoint directory.</p>'
    rows = [
        [escape(c.name), str(c.epoch), "end" if c.iteration is None else str(c.iteration),
         format_bytes(c.size), "yes" if c.committed else "no (incomplete)"]
        for c in report.checkpoints
    ]  # fmt: skip
    header = ["Checkpoint", "Epoch", "Iteration", "Size", "Committed"]
    return "<h2>Checkpoints</h2>" + _table(header, rows, numeric={1, 2, 3})


def _files(files: list[tuple[str, int]]) -> str:
    rows = [[escape(name), format_bytes(size)] for name, size in files]
    return "<h2>Files</h2>" + _table(["File", "Size"], rows, numeric={1})


def _table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.3e}"
