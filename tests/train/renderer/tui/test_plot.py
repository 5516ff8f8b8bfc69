import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from burnish.train.renderer.tui.plot import BrailleCanvas, LinePlot, PlotSeries

BRAILLE = range(0x2801, 0x2900)


def rows(canvas: BrailleCanvas) -> list[str]:
    return [text.plain for text in canvas.rows()]


def test_canvas_dots_map_to_braille_cells():
    canvas = BrailleCanvas(2, 1)
    canvas.line(0, 0, 3, 0)  # the top dot row across both cells: dots 1 and 4
    assert rows(canvas) == ["⠉⠉"]
    canvas = BrailleCanvas(1, 2)
    canvas.span(0, 0, 7)  # the whole left column of both rows: dots 1, 2, 3, 7
    assert rows(canvas) == ["⡇", "⡇"]
    canvas = BrailleCanvas(2, 1)
    canvas.line(0, 3, 3, 0)  # a rising diagonal, bottom-left to top-right
    assert rows(canvas) == ["⡠⠊"]
    canvas.set(99, 99)  # outside: ignored
    assert rows(canvas) == ["⡠⠊"]


def test_empty_cells_are_spaces():
    canvas = BrailleCanvas(3, 2)
    canvas.set(0, 0)
    assert rows(canvas) == ["⠁  ", "   "]


def render(plot: LinePlot, width: int = 60, height: int = 14) -> list[str]:
    console = Console(record=True, width=width, height=height, color_system=None)
    console.print(plot, height=height)
    return console.export_text().splitlines()


def test_line_plot_fills_its_area_with_axes_and_legend():
    train = [(x / 10, 2.0 - x / 10) for x in range(11)]
    valid = [(x / 10, 1.5 - x / 20) for x in range(11)]
    plot = LinePlot(
        [PlotSeries("Train", train, "red"), PlotSeries("Valid", valid, "blue")], x_label="epoch"
    )
    lines = render(plot)
    assert len(lines) == 14
    assert all(len(line) <= 60 for line in lines)
    assert lines[0].lstrip().startswith("2.05 ┤")  # top label: max plus 5% margin
    assert lines[10].lstrip().startswith("0.95 ┤")  # bottom label: min minus 5% margin
    assert "└" in lines[11]
    assert lines[12].split() == ["0", "epoch", "1"]
    assert lines[13].split() == ["━━", "Train", "━━", "Valid"]
    assert any(ord(char) in BRAILLE for char in "".join(lines[:11]))


def test_a_falling_series_goes_from_the_top_left_to_the_bottom_right():
    plot = LinePlot([PlotSeries("Train", [(0.0, 1.0), (1.0, 0.0)])], x_range=(0.0, 1.0))
    lines = [line.split("┤" if "┤" in line else "│", 1)[1] for line in render(plot)[:11]]
    cells = [
        (row, col) for row, line in enumerate(lines) for col, c in enumerate(line) if c.strip()
    ]
    top, bottom = min(cells), max(cells)
    assert top[0] == 0 and bottom[0] == len(lines) - 1
    assert top[1] < bottom[1]


def test_many_points_are_drawn_as_an_envelope_per_column():
    # 10,000 points alternating 0/1: every dot column spans 0..1 (inside the 5% margins).
    points = [(i / 9999, float(i % 2)) for i in range(10000)]
    lines = render(LinePlot([PlotSeries("Train", points)]), width=30, height=8)
    body = [line.split("┤" if "┤" in line else "│", 1)[1] for line in lines[:5]]
    assert [set(line) for line in body] == [{"⣶"}, {"⣿"}, {"⣿"}, {"⣿"}, {"⠿"}]
    assert len(body[0]) == 30 - len(" 1.05 ┤")


def test_non_finite_values_break_the_line_instead_of_failing():
    points = [(0.0, 1.0), (0.5, math.nan), (1.0, math.inf), (1.5, 0.0)]
    lines = render(LinePlot([PlotSeries("Train", [p for p in points if math.isfinite(p[1])])]))
    assert len(lines) == 14
    lines = render(LinePlot([PlotSeries("Train", [(0.0, 1.0), (1.0, math.nan), (2.0, 0.5)])]))
    assert "nan" not in "".join(lines)


def test_a_constant_series_and_a_tiny_area_still_render():
    lines = render(LinePlot([PlotSeries("Train", [(0.0, 3.0), (1.0, 3.0)])]))
    assert "3.15 ┤" in lines[0] and "2.85 ┤" in lines[10]
    assert (
        render(LinePlot([PlotSeries("Train", [(0, 1)])]), width=6, height=4)[0]
        == ("(too small to plot)"[:6])
    )
    assert render(LinePlot([]))[0] == "waiting for values..."


# The same awkward inputs as the report's charts (tests/cli/test_svg.py).
AWKWARD = [0.0, -0.0, 1e-12, -1e-12, 1e12, -1e12, 1e-300, 5e-324, 1.7e308, -1.7e308,
           math.nan, math.inf, -math.inf, 0.1, 0.1 + 2**-56]  # fmt: skip
VALUES = st.one_of(st.sampled_from(AWKWARD), st.floats(allow_nan=True, allow_infinity=True))
SERIES = st.one_of(
    st.lists(st.tuples(VALUES, VALUES), max_size=40),
    st.tuples(VALUES, st.integers(0, 40)).map(lambda v: [(i / 40, v[0]) for i in range(v[1])]),
    st.tuples(st.floats(-1e15, 1e15), st.integers(1, 40)).map(
        lambda v: [(i / 40, v[0] + i * 2**-60) for i in range(v[1])]
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(SERIES, max_size=2),
    st.one_of(st.none(), st.tuples(VALUES, VALUES)),
    st.integers(1, 80),
    st.integers(1, 20),
)
def test_any_series_in_any_area_renders(series, x_range, width, height):
    plot = LinePlot([PlotSeries(f"s{i}", p) for i, p in enumerate(series)], "epoch", x_range)
    lines = plot.lines(width, height)
    assert len(lines) == height
    if series and any(series) and width >= 20 and height >= 5:
        assert any(ord(c) in BRAILLE or c in "│┤" for c in "".join(t.plain for t in lines))
    assert "nan" not in "".join(t.plain for t in lines[:-2])  # no NaN axis label


def test_a_series_that_differs_only_by_float_rounding_is_drawn_flat_in_the_middle():
    mean = sum([0.1] * 8) / 8  # 0.1 plus one ulp
    lines = render(LinePlot([PlotSeries("Train", [(0.0, 0.1), (1.0, mean)])]), height=13)
    assert "0.105 ┤" in lines[0] and "0.095 ┤" in lines[9]
    middle = lines[5].split("┤")[1]
    assert set(middle.strip()) <= set(chr(c) for c in BRAILLE) and middle.strip()
