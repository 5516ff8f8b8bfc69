"""The HTML of `burnish report`: one file, inline CSS and SVG, no script, nothing fetched."""

from __future__ import annotations

from html import escape
from typing import Any

from burnish.cli.base import format_bytes
from burnish.cli.html import document, number, table
from burnish.cli.lr_finder_section import lr_finder_section
from burnish.cli.run_data import SPLITS, MetricCurves, RunReport
from burnish.cli.svg import Series, line_chart

__all__ = ["render_page"]

COLORS = {"train": "#1f77b4", "valid": "#e8590c"}


def render_page(report: RunReport) -> str:
    """The whole page for `report`."""
    name = report.directory.resolve().name or str(report.directory)
    sections = [
        _metrics(report),
        _lr_finder(report),
        _summary(report.summary),
        _model(report),
        _config(report.config),
        _checkpoints(report),
        _files(report.files),
    ]
    return document(
        f"burnish report: {name}",
        f"<h1>Run report: {escape(name)}</h1>"
        f'<p class="meta">{escape(str(report.directory.resolve()))} · '
        f"{report.summary.epochs} epoch{'s' if report.summary.epochs != 1 else ''} logged</p>"
        + "".join(sections),
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
        f"{split} {number(curves.means[split][-1][1])} ({curves.last[split]})"
        for split in SPLITS
        if curves.means[split]
    )
    return (
        f'<div class="card"><h3>{escape(curves.name)}</h3>{chart}'
        f'<p class="last">Last epoch mean: {escape(last)}</p></div>'
    )


def _lr_finder(report: RunReport) -> str:
    if report.lr_finder is None and report.lr_finder_note is None:
        return ""  # no lr_finder.json
    return lr_finder_section(report.lr_finder, report.lr_finder_note)


def _summary(summary: Any) -> str:
    rows = []
    tests = [(f"Test ({tag})", m) for tag, m in sorted(summary.metrics.test.items())]
    splits = [("Train", summary.metrics.train), ("Valid", summary.metrics.valid), *tests]
    for split, metrics in splits:
        for metric in metrics:
            low, high, last = metric.min, metric.max, metric.entries[-1]
            # An evaluation (test split) has one value and no epoch.
            steps = ("-", "-") if split.startswith("Test") else (str(low.step), str(high.step))
            rows.append(
                [escape(split), escape(metric.name), number(low.value), steps[0],
                 number(high.value), steps[1], number(last.value)]
            )  # fmt: skip
    header = ["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch", "Last"]
    return "<h2>Learner summary</h2>" + table(header, rows, numeric={2, 3, 4, 5, 6})


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
    return "<h2>Checkpoints</h2>" + table(header, rows, numeric={1, 2, 3})


def _files(files: list[tuple[str, int]]) -> str:
    rows = [[escape(name), format_bytes(size)] for name, size in files]
    return "<h2>Files</h2>" + table(["File", "Size"], rows, numeric={1})
