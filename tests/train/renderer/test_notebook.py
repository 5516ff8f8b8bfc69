"""The notebook renderer's display and lines, with a display function that records what it
is given (the real kernel: test_notebook_kernel.py), and the summary's HTML table."""

from __future__ import annotations

import html
import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.interrupter import Interrupter
from burnish.train.renderer import (
    RENDERER_ENV,
    NotebookMetricsRenderer,
    RenderSnapshot,
    TrainingProgress,
    default_renderer,
)
from burnish.train.renderer.base import printable
from burnish.train.renderer.notebook import in_notebook
from burnish.train.report.summary import (
    LearnerSummary,
    MetricSummary,
    MetricSummaryEntry,
    SummaryMetrics,
)

from tests.train.renderer.helpers import FakeClock


class Handle:
    def __init__(self, shown: list[dict[str, str]]) -> None:
        self.shown = shown

    def update(self, bundle, raw=False):
        assert raw
        self.shown.append(bundle)


class Recorder:
    """`IPython.display.display`'s part the renderer uses: each bundle shown, per display."""

    def __init__(self) -> None:
        self.displays: list[list[dict[str, str]]] = []

    def __call__(self, bundle, raw=False, display_id=False):
        assert raw and display_id
        self.displays.append([bundle])
        return Handle(self.displays[-1])


def make(interval: float = 1.0):
    display, out, clock = Recorder(), io.StringIO(), FakeClock()
    renderer = NotebookMetricsRenderer(interval, display=display, file=out, clock=clock)
    return renderer, display, out, clock


def snapshot(split="train", iteration=3, numeric=None, text=None, items=(30, 60)):
    progress = TrainingProgress(1, 2, iteration, *items)
    return RenderSnapshot(split, progress, numeric or {}, text or {})


def test_one_display_per_run_updated_in_place_and_the_epoch_lines_printed():
    renderer, display, out, clock = make()
    renderer.start(2, Interrupter())
    assert renderer.due() and not renderer.due()  # once per interval
    renderer.render(snapshot(numeric={"Loss": (0.25, 0.5)}))
    clock.now += 1.0
    assert renderer.due()
    renderer.end_epoch("train", 1, {"Loss": 0.375})
    renderer.close()
    [shown] = display.displays
    assert [b["text/plain"] for b in shown] == [
        "Training for 2 epochs",
        "[train] epoch 1/2 | iteration 3 | items 30/60 (50.0%) | Loss 0.25 (epoch 0.5)",
        "[train] epoch 1/2 done",
    ]
    assert '<progress style="width: 100%" value="0.5000" max="1">' in shown[1]["text/html"]
    assert "<td>Loss</td><td>0.25</td><td>0.5</td>" in shown[1]["text/html"]
    assert "<td>Loss</td><td></td><td>0.375</td>" in shown[2]["text/html"]
    assert out.getvalue().splitlines() == [
        "Training for 2 epochs.",
        "[train] epoch 1/2 done in 1.0s | Loss 0.375",
    ]


def test_an_unknown_epoch_size_shows_a_moving_bar():
    renderer, display, _, _ = make()
    renderer.start(1, Interrupter())
    renderer.render(snapshot(items=(5, 0)))
    assert '<progress style="width: 100%"></progress>' in display.displays[0][-1]["text/html"]


def test_each_evaluated_data_set_gets_its_display():
    renderer, display, out, _ = make()
    for name in ("a", "b"):
        renderer.start_test(name, Interrupter())
        renderer.render(snapshot("test", numeric={"Accuracy": (50.0, 50.0)}))
        renderer.end_epoch("test", 1, {"Accuracy": 50.0})
    renderer.close()
    assert [d[-1]["text/plain"] for d in display.displays] == [
        "[test a] done",
        "[test b] done",
    ]
    assert "[test b] | iteration 3" in display.displays[1][1]["text/plain"]
    assert "Evaluating a." in out.getvalue() and "[test b] done in" in out.getvalue()


def test_messages_and_a_stop_are_printed():
    renderer, _, out, _ = make()
    renderer.message("Resumed from checkpoint epoch-1, iteration 10: ...")
    interrupter = Interrupter()
    renderer.start(1, interrupter)
    interrupter.stop("test")
    renderer.close()
    assert out.getvalue().splitlines() == [
        "Resumed from checkpoint epoch-1, iteration 10: ...",
        "Training for 1 epoch.",
        "Training stopped: test.",
    ]


def test_refresh_interval_is_checked():
    with pytest.raises(ValueError, match=r"`refresh_interval_s` must be > 0. Received: .*0"):
        NotebookMetricsRenderer(0)


def test_outside_a_kernel_the_default_is_not_the_notebook_renderer(monkeypatch):
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    assert not in_notebook()
    assert not isinstance(default_renderer(io.StringIO()), NotebookMetricsRenderer)
    monkeypatch.setenv(RENDERER_ENV, "notebook")
    assert isinstance(default_renderer(), NotebookMetricsRenderer)


AWKWARD = [0.0, 1e-12, -1e12, 1.7e308, 5e-324, math.nan, math.inf, -math.inf]
VALUES = st.one_of(st.sampled_from(AWKWARD), st.floats(allow_nan=True, allow_infinity=True))
NAMES = st.text(min_size=0, max_size=12)


@settings(max_examples=100, deadline=None)
@given(
    numeric=st.dictionaries(NAMES, st.tuples(VALUES, VALUES), max_size=4),
    text=st.dictionaries(NAMES, NAMES, max_size=2),
    items=st.tuples(st.integers(0, 10**12), st.integers(-1, 10**12)),
)
def test_any_snapshot_renders_escaped_html_and_plain_text(numeric, text, items):
    renderer, display, _, _ = make()
    renderer.start(1, Interrupter())
    renderer.render(snapshot(numeric=numeric, text=text, items=items))
    bundle = display.displays[0][-1]
    for name in [*numeric, *text]:
        assert f"<td>{html.escape(printable(name))}</td>" in bundle["text/html"]
    assert "<script" not in bundle["text/html"]
    assert "\x1b" not in bundle["text/plain"] + bundle["text/html"]


ENTRIES = st.lists(
    st.builds(MetricSummaryEntry, st.integers(1, 100), VALUES), min_size=0, max_size=5
)


@settings(max_examples=100, deadline=None)
@given(
    train=st.lists(st.builds(MetricSummary, NAMES, ENTRIES), max_size=3),
    test=st.dictionaries(NAMES, st.lists(st.builds(MetricSummary, NAMES, ENTRIES), max_size=2)),
)
def test_the_summary_table_in_html_has_the_rows_of_the_text_table(train, test):
    summary = LearnerSummary(3, SummaryMetrics(train, [], test))
    table = summary._repr_html_()
    text_rows = [line for line in str(summary).splitlines() if line.startswith("| ")][1:]
    assert table.count("<tr>") - 1 == len(text_rows)  # the header row, then one per row
    assert table.startswith('<div class="burnish-summary">') and table.endswith("</div>")
    for metric in train:
        if metric.entries:
            assert f"<td>Train</td><td>{html.escape(printable(metric.name))}</td>" in table
    assert "\x1b" not in table
