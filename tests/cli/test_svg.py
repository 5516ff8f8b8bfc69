"""The report's SVG charts are total: any series renders (constant, empty, NaN, tiny, huge...)."""

import itertools
import math
import re
import xml.etree.ElementTree as ElementTree

from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.cli.compare_page import run_colors
from burnish.cli.svg import Series, downsample, legend_label, line_chart, nice_ticks, text_width

# Every kind of value a metric log can hold, the awkward ones often.
AWKWARD = [0.0, -0.0, 1e-12, -1e-12, 1e12, -1e12, 1e-300, 5e-324, 1.7e308, -1.7e308,
           math.nan, math.inf, -math.inf, 0.1, 0.1 + 2**-56, 0.001]  # fmt: skip
VALUES = st.one_of(st.sampled_from(AWKWARD), st.floats(allow_nan=True, allow_infinity=True))
# A series: empty, one point, a constant, one that differs only by float rounding, or anything.
SERIES = st.one_of(
    st.lists(VALUES, max_size=30),
    st.tuples(VALUES, st.integers(0, 30)).map(lambda v: [v[0]] * v[1]),
    st.tuples(st.floats(-1e15, 1e15), st.integers(1, 30)).map(
        lambda v: [v[0] + k * 2**-60 for k in range(v[1])]
    ),
)
# Control characters (not allowed in XML) become U+FFFD in the chart.
NOT_XML = {
    c: "\ufffd" for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF]
}
NUMBER = re.compile(r' (?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)"')
POINTS = re.compile(r' points="([^"]*)"')


def test_a_series_that_differs_only_by_float_rounding_gets_ticks():
    """The mean of eight 0.1 learning rates is 0.1 plus one ulp: the old ticks never advanced."""
    mean = sum([0.1] * 8) / 8
    assert mean != 0.1
    assert nice_ticks(0.1, mean) == [0.09, 0.095, 0.1, 0.105, 0.11]
    assert nice_ticks(0.3, 0.3) == [0.26, 0.28, 0.3, 0.32, 0.34]
    assert nice_ticks(1e-12, 1e-12)[0] < 1e-12 < nice_ticks(1e-12, 1e-12)[-1]
    assert nice_ticks(0.0, 3.0, integers=True) == [0.0, 1.0, 2.0, 3.0]


@settings(max_examples=300, deadline=None)
@given(VALUES, VALUES, st.booleans())
def test_ticks_are_few_finite_increasing_and_cover_the_finite_bounds(low, high, integers):
    ticks = nice_ticks(low, high, integers=integers)
    assert 2 <= len(ticks) <= 5 + 3
    assert all(math.isfinite(t) for t in ticks)
    assert all(a < b for a, b in itertools.pairwise(ticks))
    slack = 1e-9 * (abs(ticks[0]) + abs(ticks[-1]))  # a bound a billionth off a tick is on it
    for bound in (low, high):
        if math.isfinite(bound):
            assert ticks[0] - slack <= bound <= ticks[-1] + slack


@settings(max_examples=200, deadline=None)
@given(SERIES, SERIES, st.sampled_from([0.0, 1.0, 3.0, 1e12, math.nan, math.inf, -2.0]))
def test_any_series_renders_a_well_formed_chart(train, valid, x_max):
    epochs = max(len(train), len(valid), 1)
    series = [
        Series("train", "#1f77b4", [(i + 1, v) for i, v in enumerate(train)],
               [(i + 0.5, v) for i, v in enumerate(train)]),
        Series("valid", "#e8590c", [(i + 1, v) for i, v in enumerate(valid)]),
    ]  # fmt: skip
    svg = line_chart(series, x_max if x_max != 3.0 else float(epochs), x_label="epoch", title="t")
    ElementTree.fromstring(svg)  # well-formed
    coordinates = NUMBER.findall(svg) + " ".join(POINTS.findall(svg)).replace(",", " ").split()
    assert all(math.isfinite(float(c)) for c in coordinates), "a coordinate is NaN or inf"
    finite = [v for v in train + valid if math.isfinite(v)]
    if not finite:
        assert "no finite values" in svg
        return
    assert svg.count("<circle") == len(finite)
    for anchor in ("end", "middle"):  # the y axis' labels, then the x axis'
        labels = re.findall(rf'text-anchor="{anchor}" class="tick">([^<]*)<', svg)
        assert len(labels) >= 2 and len(set(labels)) == len(labels), labels


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6), VALUES), max_size=3000), st.integers(2, 50))
def test_downsample_keeps_at_most_limit_points_and_never_overflows(points, limit):
    out = downsample(points, limit)
    if len(points) <= limit:
        assert out == points
        return
    assert len(out) <= limit
    assert all(math.isfinite(x) and math.isfinite(y) for x, y in out)  # means of finite values


# Run names: any text, up to far wider than a legend row (the comparison's legend).
LABELS = st.one_of(st.text(max_size=12), st.text(max_size=120), st.sampled_from(
    ["run", "a/run", "<&\"'>", "\x00\x1b[31m", "中文运行" * 20, "x" * 61, ""]
))  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(LABELS, SERIES, st.booleans()), min_size=1, max_size=12),
    st.sampled_from([0.0, 3.0, 1e12, math.nan, math.inf]),
)
def test_several_series_render_with_one_legend_entry_each_inside_the_chart(runs, x_max):
    colors = run_colors(len(runs))
    series = [
        Series(label, color, [(i + 1, v) for i, v in enumerate(values)],
               [(i + 0.5, v) for i, v in enumerate(values)] if detailed else [])
        for (label, values, detailed), color in zip(runs, colors)
    ]  # fmt: skip
    svg = line_chart(series, x_max, x_label="epoch", title=runs[0][0])
    root = ElementTree.fromstring(svg)  # well-formed, whatever the labels hold
    coordinates = NUMBER.findall(svg) + " ".join(POINTS.findall(svg)).replace(",", " ").split()
    assert all(math.isfinite(float(c)) for c in coordinates), "a coordinate is NaN or inf"
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    # The legend: one entry per series, in order, in its colour, whole or shortened.
    texts = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "legend"]
    texts = texts or [t for t in root.iter("text") if t.get("class") == "legend"]
    assert len(texts) == len(series)
    for text, s in zip(texts, series):
        shown = text.text or ""
        assert shown == legend_label(s.label).translate(NOT_XML)
        assert text_width(shown) <= 420 + 7
        x = float(text.get("x"))
        assert x - 22 >= 0 and x + text_width(shown) <= width  # inside the chart
    rows = sorted({float(t.get("y")) for t in texts})
    assert height == 300 + 18 * (len(rows) - 1)  # taller by one row per extra legend row
    finite = [v for values in (r[1] for r in runs) for v in values if math.isfinite(v)]
    if not finite:
        assert "no finite values" in svg
        return
    assert svg.count("<circle") == len(finite)
    top = min(float(y) for y in re.findall(r'<line x1="64" y1="([^"]*)"', svg))  # the grid
    assert top > rows[-1], "the plot overlaps the legend"
    assert all(float(c) <= height for c in re.findall(r' cy="([^"]*)"', svg))


def test_one_row_of_legend_keeps_the_chart_as_it_was():
    """Two short labels (a run's train and valid): one row, where it always was."""
    series = [Series("train", "#1f77b4", [(1, 0.5), (2, 0.25)]),
              Series("valid", "#e8590c", [(1, 0.6)])]  # fmt: skip
    svg = line_chart(series, 2.0, x_label="epoch", title="t")
    assert 'viewBox="0 0 560 300"' in svg
    assert re.findall(r'<text x="([^"]*)" y="18" class="legend">', svg) == ["440", "503"]
