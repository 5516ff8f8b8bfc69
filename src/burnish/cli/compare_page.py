"""The HTML of `burnish report DIR DIR ...`: several runs on one page, one colour per run.

The runs (name, directory, epochs), each metric's curves overlaid per split, the final and
best values side by side (evaluations included) and how the configs differ. Like the one-run
page: one file, inline CSS and SVG, no script, nothing fetched.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from html import escape

from burnish.cli.compare import ComparedRun, ComparisonRow, Outcome, comparison_rows
from burnish.cli.config_diff import ROOT, diff_configs
from burnish.cli.html import document, number, table
from burnish.cli.run_data import SPLITS
from burnish.cli.svg import Series, line_chart

__all__ = ["render_comparison", "run_colors"]

# Tableau 10: distinct on screen and in print; more runs get evenly spread hues.
_PALETTE = ["#1f77b4", "#e8590c", "#2ca02c", "#d62728", "#9467bd",
            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]  # fmt: skip
_MISSING = '<span class="missing">missing</span>'
_VALUE_CHARS = 120  # a config value longer than this is shortened (whole in its tooltip)


def run_colors(count: int) -> list[str]:
    """`count` distinct CSS colours: the palette's, then hues a golden angle apart."""
    colors = _PALETTE[:count]
    for index in range(len(colors), count):
        hue = (index * 0.381966) % 1.0
        red, green, blue = colorsys.hls_to_rgb(hue, 0.42, 0.7)
        colors.append(f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}")
    return colors


def render_comparison(runs: Sequence[ComparedRun]) -> str:
    """The whole page comparing `runs` (two or more)."""
    colors = run_colors(len(runs))
    names = ", ".join(run.name for run in runs)
    sections = [
        _runs(runs, colors),
        _metrics(runs, colors),
        _values(runs, comparison_rows(runs), colors),
        _configs(runs),
    ]
    return document(
        f"burnish comparison: {names}",
        f"<h1>Run comparison: {len(runs)} runs</h1>"
        f'<p class="meta">{escape(names)}</p>' + "".join(sections),
    )


def _swatch(color: str) -> str:
    return f'<span class="swatch" style="background: {color}"></span>'


def _runs(runs: Sequence[ComparedRun], colors: list[str]) -> str:
    rows = []
    for run, color in zip(runs, colors):
        tests = ", ".join(sorted(run.summary.metrics.test)) or "none"
        rows.append(
            [_swatch(color) + escape(run.name), escape(str(run.directory.resolve())),
             str(run.summary.epochs), escape(tests)]
        )  # fmt: skip
    header = ["Run", "Directory", "Epochs", "Evaluations"]
    return "<h2>Runs</h2>" + table(header, rows, numeric={2})


def _metrics(runs: Sequence[ComparedRun], colors: list[str]) -> str:
    names = sorted({curves.name for run in runs for curves in run.curves})
    epochs = max(run.summary.epochs for run in runs)
    cards = [
        _metric_card(runs, colors, name, split, float(epochs)) for name in names for split in SPLITS
    ]
    if not any(cards):
        return '<h2>Metrics</h2><p class="note">No run logged a train or valid metric.</p>'
    return (
        '<h2>Metrics</h2><p class="meta">One colour per run. Bold: the epoch values; faint: '
        "every iteration's value.</p>"
        f'<div class="charts">{"".join(cards)}</div>'
    )


def _metric_card(
    runs: Sequence[ComparedRun], colors: list[str], name: str, split: str, epochs: float
) -> str:
    """The chart of metric `name` on `split` in every run that logged it ("" if none did)."""
    series, missing = [], []
    for run, color in zip(runs, colors):
        curves = next((c for c in run.curves if c.name == name), None)
        if curves is None or not (curves.means[split] or curves.iterations[split]):
            missing.append(run.name)
            continue
        points = curves.means[split]
        series.append(Series(run.name, color, points, curves.iterations[split]))
    if not series:
        return ""
    title = f"{name} · {split}"
    chart = line_chart(series, epochs, x_label="epoch", title=title)
    note = f'<p class="last">Not logged by: {escape(", ".join(missing))}</p>' if missing else ""
    return f'<div class="card"><h3>{escape(title)}</h3>{chart}{note}</div>'


def _values(runs: Sequence[ComparedRun], rows: list[ComparisonRow], colors: list[str]) -> str:
    if not rows:
        return '<h2>Final and best values</h2><p class="note">No metric values.</p>'
    head = (
        '<tr><th rowspan="2">Split</th><th rowspan="2">Metric</th><th rowspan="2">Best is</th>'
        + "".join(
            f'<th colspan="2">{_swatch(color)}{escape(run.name)}</th>'
            for run, color in zip(runs, colors)
        )
        + "</tr><tr>"
        + "<th>Final</th><th>Best</th>" * len(runs)
        + "</tr>"
    )
    body = [
        [escape(row.split), escape(row.metric), "lower ↓" if row.lower_is_better else "higher ↑",
         *[cell for outcome in row.outcomes for cell in _cells(row, outcome)]]
        for row in rows
    ]  # fmt: skip
    numeric = set(range(3, 3 + 2 * len(runs)))
    return (
        '<h2>Final and best values</h2><p class="meta">Final: the last epoch\'s value; best: '
        "the lowest or highest epoch value (told from the metric's name), with its epoch. An "
        "evaluation has one value, both final and best. Bold: the best of the runs.</p>"
        f'<div class="wide">{table([], body, numeric, head_html=head)}</div>'
    )


def _cells(row: ComparisonRow, outcome: Outcome | None) -> list[str]:
    if outcome is None:
        return [_MISSING, _MISSING]
    return [
        _value(outcome.final, outcome.final_epoch, row.leader("final")),
        _value(outcome.best, outcome.best_epoch, row.leader("best")),
    ]


def _value(value: float, epoch: int | None, leader: float | None) -> str:
    text = number(value)
    if leader is not None and value == leader:
        text = f"<b>{text}</b>"
    return text if epoch is None else f"{text} <small>(epoch {epoch})</small>"


def _configs(runs: Sequence[ComparedRun]) -> str:
    compared = [run for run in runs if run.config_note is None]
    skipped = [f"{run.name} ({run.config_note})" for run in runs if run.config_note is not None]
    note = f'<p class="note">Not compared: {escape("; ".join(skipped))}.</p>' if skipped else ""
    if len(compared) < 2:
        return (
            '<h2>Config differences</h2><p class="note">Fewer than two runs have a readable '
            "config.json: nothing to compare.</p>" + note
        )
    diff = diff_configs([run.config for run in compared])
    if diff.differing:
        rows = [
            [_path(path), *[_config_value(value) for value in values]]
            for path, values in diff.differing.items()
        ]
        differing = table(["Key", *[run.name for run in compared]], rows, numeric=set())
    else:
        differing = '<p class="note">The configs are the same.</p>'
    same = ""
    if diff.same:
        rows = [[_path(path), _config_value(value)] for path, value in diff.same.items()]
        count = len(diff.same)
        same = (
            f"<details><summary>{count} key{'s' if count != 1 else ''} with the same value in "
            f"every run</summary>{table(['Key', 'Value'], rows, numeric=set())}</details>"
        )
    return (
        '<h2>Config differences</h2><p class="meta">The keys of config.json (flattened: '
        "<code>model.hidden_size</code>, <code>betas[0]</code>) whose values differ.</p>"
        f'{note}<div class="wide">{differing}</div>{same}'
    )


def _path(path: str) -> str:
    return "(the whole config)" if path == ROOT else f"<code>{escape(path)}</code>"


def _config_value(value: str | None) -> str:
    if value is None:
        return _MISSING
    if len(value) <= _VALUE_CHARS:
        return escape(value)
    short = value[: _VALUE_CHARS - 1] + "…"
    return f'<span title="{escape(value)}">{escape(short)}</span>'
