import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from burnish.train.renderer import RenderSnapshot, TrainingProgress
from burnish.train.renderer.tui.dashboard import DashboardState
from burnish.train.renderer.tui.panels import (
    build_dashboard,
    controls_panel,
    format_compact,
    metrics_panel,
    plot_panel,
    progress_panel,
    status_panel,
)

from tests.train.renderer.helpers import FakeClock


def screen(renderable, width: int = 120, height: int = 40) -> str:
    console = Console(record=True, width=width, height=height, color_system=None)
    console.print(renderable)
    return console.export_text()


def trained_state() -> DashboardState:
    """Two epochs of train and valid, then the third epoch a fifth done."""
    clock = FakeClock()
    state = DashboardState(5, clock)
    for epoch in (1, 2):
        for i in range(1, 51):
            clock.now += 1.0
            progress = TrainingProgress(epoch, 5, i, i * 32, 1600)
            loss = 2.0 / (epoch + i / 50)
            numeric = {"Loss": (loss, loss + 0.1), "Accuracy": (40.0 + 10 * epoch + i / 5, 45.0)}
            state.update(RenderSnapshot("train", progress, numeric, {"Speed": "12.5 iter/s"}))
        state.end_epoch("train", epoch, {"Loss": 1.25, "Accuracy": 55.5})
        for i in range(1, 11):
            progress = TrainingProgress(epoch, 5, i, i * 32, 320)
            state.update(RenderSnapshot("valid", progress, {"Loss": (1.5, 1.5)}))
        state.end_epoch("valid", epoch, {"Loss": 1.375, "Accuracy": 53.25})
    numeric = {"Loss": (0.31241, 0.5), "Accuracy": (81.0, 80.5)}
    state.update(RenderSnapshot("train", TrainingProgress(3, 5, 10, 320, 1600), numeric))
    return state


def test_dashboard_shows_every_panel():
    text = screen(build_dashboard(trained_state()))
    lines = text.splitlines()
    assert len(lines) == 40 and max(len(line) for line in lines) <= 120
    for title in ("Metrics", "Status", "Controls", "Progress", "Plot: Loss (full history)"):
        assert f"─ {title} ─" in text
    assert re.search(r"Metric\s+batch\s+epoch\s+batch\s+epoch", text)
    assert re.search(r"Loss\s+0\.3124\s+0\.5\s+1\.5\s+1\.375", text)  # train now, valid done
    assert re.search(r"Accuracy\s+81\s+80\.5\s+-\s+53\.25", text)
    assert "Speed: Train 12.5 iter/s" in text
    assert re.search(r"Mode\s+Training", text)
    assert re.search(r"Epoch\s+3/5", text)
    assert re.search(r"Iteration\s+10", text)
    assert re.search(r"Items\s+320/1600 \(20%\)", text)
    assert re.search(r"Elapsed\s+1 min", text)
    assert re.search(r"44\.0% \(ETA \d+ (sec|min)s?\)", text)  # 2.2 of 5 epochs
    assert "← → ↑ ↓" not in text and "q stop" in text
    assert "━━ Train" in text and "━━ Valid" in text
    assert re.search(r"[\u2801-\u28ff]", text)


def test_keys_switch_the_plotted_metric_and_the_history_kind():
    state = trained_state()
    assert state.on_key("right")
    assert "Plot: Accuracy (full history)" in screen(build_dashboard(state))
    assert state.on_key("right")  # wraps around
    assert state.selected_name == "Loss"
    assert state.on_key("left")
    assert state.selected_name == "Accuracy"
    assert state.on_key("up")
    text = screen(build_dashboard(state))
    assert "Plot: Accuracy (current epoch)" in text
    assert "fraction of the current epoch" in text
    assert not state.on_key("q")  # not a navigation key


def test_stopping_and_validation_are_shown():
    state = trained_state()
    state.update(RenderSnapshot("valid", TrainingProgress(3, 5, 2, 64, 320), {"Loss": (1, 1)}))
    state.stopping = "Training stopped by the user (q)"
    text = screen(build_dashboard(state))
    assert re.search(r"Mode\s+Validating", text)
    assert re.search(r"Items\s+64/320 \(20%\)", text)
    assert re.search(r"Stopping\s+Training stopped by the user \(q\)", text)
    assert "(stopping...)" in text


def test_panels_before_any_value():
    state = DashboardState(3, FakeClock())
    text = screen(build_dashboard(state), width=80, height=24)
    assert "waiting for metrics..." in text
    assert re.search(r"Epoch\s+-/3", text)
    assert "0.0% (ETA ---)" in text
    assert "Metric" in screen(metrics_panel(state), width=60, height=10)
    assert "Mode" in screen(status_panel(state), width=60, height=10)


def test_values_stay_short_and_names_stay_readable():
    assert [format_compact(v) for v in (0.312414, 91.0, 12345.6, 2e-5, 8.5071e-8, -0.5)] == [
        "0.3124",
        "91",
        "12346",
        "2.00e-05",
        "8.51e-08",
        "-0.5",
    ]
    assert format_compact(float("nan")) == "nan"
    # The widest realistic row (a decayed learning rate) at 120 columns keeps its name whole.
    state = DashboardState(100, FakeClock())
    numeric = {"Learning Rate": (8.5071e-8, 8.4503e-8), "Loss": (0.10905, 0.10373)}
    state.update(RenderSnapshot("train", TrainingProgress(50, 100, 3, 96, 960), numeric))
    state.end_epoch("valid", 49, {"Learning Rate": 8.6e-8, "Loss": 0.20194})
    text = screen(build_dashboard(state))
    assert re.search(r"Learning Rate\s+8\.51e-08\s+8\.45e-08\s+-\s+8\.60e-08", text)
    assert re.search(r"Metric\s+batch\s+epoch\s+batch\s+epoch", text)


def test_the_status_panel_shows_the_model_size():
    from rich.console import Console
    from torch import nn

    from burnish.module_summary import ModelSummary
    from burnish.train.renderer.tui.panels import model_line, status_panel

    summary = ModelSummary.from_module(nn.Sequential(nn.Linear(10, 5), nn.Linear(5, 2)))
    assert model_line(summary) == "Sequential · 67 params (67 trainable) · 0.00 MiB"
    state = DashboardState(3)
    state.model = model_line(summary)
    console = Console(width=100, record=True)
    console.print(status_panel(state))
    assert "67 params" in console.export_text()


# Every state the learner can put the dashboard in, in any order: no value yet, one point, one
# split only, end_epoch without any iteration shown (torchrun: a gather longer than the epoch),
# NaN/inf, tiny and huge values, keys, a stop request.
AWKWARD = [0.0, 1e-12, -1e-12, 1e12, -1e12, 1.7e308, -1.7e308, 5e-324,
           math.nan, math.inf, -math.inf, 0.1, 0.1 + 2**-56]  # fmt: skip
VALUE = st.one_of(st.sampled_from(AWKWARD), st.floats(allow_nan=True, allow_infinity=True))
NAMES = st.one_of(
    st.sampled_from(["Loss", "Accuracy", "Learning Rate", "A metric with a very long name"]),
    st.text(min_size=1, max_size=12),  # any user name: markup ("[/]"), control characters
)
SPLIT = st.sampled_from(["train", "valid"])
EPOCH = st.integers(1, 4)
UPDATE = st.builds(
    lambda split, epoch, iteration, items, total, numeric, text: (
        "update",
        RenderSnapshot(split, TrainingProgress(epoch, 4, iteration, items, total), numeric, text),
    ),
    SPLIT, EPOCH, st.integers(0, 50), st.integers(0, 100), st.integers(0, 100),
    st.dictionaries(NAMES, st.tuples(VALUE, VALUE), max_size=3),
    st.dictionaries(NAMES, st.text(max_size=10), max_size=2),
)  # fmt: skip
END = st.tuples(st.just("end"), SPLIT, EPOCH, st.dictionaries(NAMES, VALUE, max_size=3))
KEY = st.tuples(st.just("key"), st.sampled_from(["left", "right", "up", "down", "q"]))
STOP = st.tuples(st.just("stop"), st.text(max_size=30))
MODEL = st.tuples(st.just("model"), st.text(max_size=30))
EVENTS = st.lists(st.one_of(UPDATE, END, KEY, STOP, MODEL), max_size=12)


def apply(state: DashboardState, event: tuple) -> None:
    kind, *args = event
    if kind == "update":
        state.update(args[0])
    elif kind == "end":
        state.end_epoch(*args)
    elif kind == "key":
        state.on_key(args[0])
    elif kind == "model":
        state.model = args[0]
    else:
        state.stopping = args[0] or "stop requested"


@settings(max_examples=150, deadline=None)
@given(EVENTS, st.integers(20, 160), st.integers(8, 50))
def test_every_panel_draws_every_state(events, width, height):
    state = DashboardState(4, FakeClock())
    for event in events:
        apply(state, event)
        for panel in (metrics_panel(state), status_panel(state), plot_panel(state),
                      progress_panel(state), controls_panel()):  # fmt: skip
            screen(panel, width=width, height=height)
    lines = screen(build_dashboard(state), width=width, height=height).splitlines()
    assert len(lines) == height and max(cell_len(line) for line in lines) <= width


def test_an_epoch_without_iterations_shown_is_plotted_and_counted():
    """Under torchrun with an epoch shorter than the gather, only `end_epoch` arrives."""
    state = DashboardState(20, FakeClock())
    for epoch in (1, 2, 3):
        state.end_epoch("train", epoch, {"Loss": 4.0 / epoch})
        state.end_epoch("valid", epoch, {"Loss": 3.0 / epoch})
    text = screen(build_dashboard(state))
    assert re.search(r"Epoch\s+3/20", text)  # not "-/20"
    assert re.search(r"Loss\s+-\s+1\.333\s+-\s+1\b", text)
    assert "15.0% (ETA" in text  # 3 of 20 epochs
    assert "Plot: Loss (full history)" in text and "━━ Train" in text and "━━ Valid" in text
    assert re.search(r"[\u2801-\u28ff]", text)
    assert state.history.series("Loss") == {
        "train": [(1.0, 4.0), (2.0, 2.0), (3.0, 4.0 / 3)],
        "valid": [(1.0, 3.0), (2.0, 1.5), (3.0, 1.0)],
    }
