"""`burnish report` plots `lr_finder.json`: the smoothed loss on a log axis with the suggestion
marked, beside a run's metrics or alone before any training; an unreadable file is named, the
rest of the page stays. The chart's log axis and marks are total over any values."""

from __future__ import annotations

import math
import re
import shutil
import xml.etree.ElementTree as ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.cli.svg import Mark, Series, line_chart
from burnish.tune import LR_FINDER_FILE, LrFinderResult, exponential_lrs

from tests.cli.helpers import assert_one_line_error, burnish

NUMBER = re.compile(r' (?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)"')


def sweep() -> LrFinderResult:
    """A sweep's shape: flat, a fall around 1e-2, then divergence at the last rate."""
    lrs = exponential_lrs(1e-7, 10.0, 100)[:90]
    losses = [2.3 - 1.6 / (1 + math.exp(-(k - 60) / 4)) for k in range(89)] + [400.0]
    return LrFinderResult(lrs, losses, 0.9, 4.0, num_iterations=100)


def chart_of(page: str) -> ElementTree.Element:
    section = page[page.index("<h2>Learning-rate finder</h2>") :]
    return ElementTree.fromstring(section[section.index("<svg") : section.index("</svg>") + 6])


def test_the_report_of_a_run_shows_the_sweep_with_its_suggestion(run_dir, tmp_path):
    run = shutil.copytree(run_dir, tmp_path / "run")
    result = sweep()
    result.save(run / LR_FINDER_FILE)
    done = burnish("report", run)
    assert done.returncode == 0, done.stderr
    page = (run / "report.html").read_text()
    assert page.index("<h3>Loss</h3>") < page.index("<h2>Learning-rate finder</h2>")
    chart = chart_of(page)
    labels = [t.text for t in chart.iter("text") if t.get("class") == "tick"]
    assert {"1e-6", "1e-4", "1e-2"} <= set(labels)  # decades on the x axis
    suggestion = result.suggestion()
    assert suggestion is not None and 1e-3 < suggestion < 1e-1
    mark = next(t for t in chart.iter("text") if t.get("class") == "mark")
    assert mark.text == f"suggestion {suggestion:.2e}"
    line = chart.find("polyline[@stroke='#2f9e44']")
    assert line is not None and len(line.get("points").split()) == 89  # the diverged one left out
    assert f"Suggestion: {suggestion:.3g}" in page and "89 of 100" not in page
    assert "90 of 100 iterations, stopped at lr" in page and "diverged (not drawn)" in page
    assert f"<td>{LR_FINDER_FILE}</td>" in page  # listed among the files


def test_a_directory_with_only_the_sweep_gets_its_page(tmp_path):
    sweep().save(tmp_path / LR_FINDER_FILE)
    done = burnish("report", tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    assert "no metric logs yet" in page and chart_of(page).tag.endswith("svg")
    (tmp_path / LR_FINDER_FILE).unlink()  # and without it, the usual error
    assert_one_line_error(burnish("report", tmp_path), "No training, validation or test")


@pytest.mark.parametrize("content", ["{broken", '{"format": "something else"}'])
def test_an_unreadable_sweep_is_named_and_the_page_stays(run_dir, tmp_path, content):
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / LR_FINDER_FILE).write_text(content)
    done = burnish("report", run)
    assert done.returncode == 0, done.stderr
    page = (run / "report.html").read_text()
    assert f"{LR_FINDER_FILE} could not be read" in page and "<h3>Loss</h3>" in page


def test_a_sweep_without_suggestion_says_so(tmp_path):
    LrFinderResult([1e-3, 1e-2, 1e-1], [1.0, 1.0, 1.0]).save(tmp_path / LR_FINDER_FILE)
    assert burnish("report", tmp_path).returncode == 0
    page = (tmp_path / "report.html").read_text()
    assert "No suggestion: the smoothed loss falls nowhere" in page and 'class="mark"' not in page


VALUES = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(VALUES, VALUES), max_size=40),
    VALUES,
    VALUES,
    st.lists(VALUES, max_size=3),
)
def test_a_log_axis_with_marks_renders_a_well_formed_chart(points, x_min, x_max, marks):
    series = [Series("smoothed loss", "#2f9e44", points, markers=False)]
    svg = line_chart(
        series, x_max, x_min=x_min, x_label="lr", title="t",
        x_format=lambda t: f"1e{t:g}", marks=[Mark(x, "<suggestion>") for x in marks],
    )  # fmt: skip
    root = ElementTree.fromstring(svg)
    coordinates = NUMBER.findall(svg)
    assert all(math.isfinite(float(c)) for c in coordinates), "a coordinate is NaN or inf"
    assert "<circle" not in svg
    if any(math.isfinite(x) and math.isfinite(y) for x, y in points):
        shown = [t for t in root.iter("text") if t.get("class") == "mark"]
        assert len(shown) == sum(math.isfinite(x) for x in marks)
        assert all(t.text == "<suggestion>" for t in shown)
