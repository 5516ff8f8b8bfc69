import io
import re

import pytest

from burnish.train.interrupter import Interrupter
from burnish.train.renderer import CliMetricsRenderer, RenderSnapshot, TrainingProgress

from tests.train.renderer.helpers import FakeClock, drive


def make(**kwargs) -> tuple[CliMetricsRenderer, io.StringIO, FakeClock]:
    out, clock = io.StringIO(), FakeClock()
    return CliMetricsRenderer(file=out, clock=clock, **kwargs), out, clock


def test_percent_steps_print_progress_lines_and_due_stays_sparse():
    renderer, out, _ = make(interval_s=None, every_percent=25)
    renderer.start(2, Interrupter())
    renders = drive(renderer, "train", 1, 2, num_iterations=100)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Training for 2 epochs."
    assert lines[1:4] == [
        "[train] epoch 1/2 | iteration 25 | items 250/1000 (25.0%) | Loss 0.04 (epoch 0.08)",
        "[train] epoch 1/2 | iteration 50 | items 500/1000 (50.0%) | Loss 0.02 (epoch 0.04)",
        "[train] epoch 1/2 | iteration 75 | items 750/1000 (75.0%)"
        " | Loss 0.013333 (epoch 0.026667)",
    ]
    assert re.fullmatch(
        r"\[train\] epoch 1/2 done in 0\.0s \| Loss 0\.5 \| Accuracy 91\.25", lines[4]
    )
    assert len(lines) == 5
    # due() predicted the crossings: a handful of metric reads per epoch, not 100.
    assert renders <= 6


def test_each_split_and_epoch_restarts_its_percent_steps():
    renderer, out, _ = make(interval_s=None, every_percent=50)
    renderer.start(2, Interrupter())
    for epoch in (1, 2):
        drive(renderer, "train", epoch, 2, num_iterations=10)
        drive(renderer, "valid", epoch, 2, num_iterations=4)
    lines = out.getvalue().splitlines()[1:]
    prefixes = [line.split(" |")[0] for line in lines]
    assert prefixes == [
        "[train] epoch 1/2",
        "[train] epoch 1/2 done in 0.0s",
        "[valid] epoch 1/2",
        "[valid] epoch 1/2 done in 0.0s",
        "[train] epoch 2/2",
        "[train] epoch 2/2 done in 0.0s",
        "[valid] epoch 2/2",
        "[valid] epoch 2/2 done in 0.0s",
    ]
    assert "items 20/40 (50.0%)" in lines[2]


def test_time_based_lines_and_epoch_duration():
    renderer, out, clock = make(interval_s=10.0)
    renderer.start(1, Interrupter())
    renders = drive(renderer, "train", 1, 1, num_iterations=35, clock=clock, step_s=1.0)
    lines = out.getvalue().splitlines()[1:]
    iterations = [int(re.search(r"iteration (\d+)", line)[1]) for line in lines[:-1]]
    assert iterations == [10, 20, 30]
    assert renders == 3
    assert lines[-1].startswith("[train] epoch 1/1 done in 35.0s | Loss 0.5")


def test_output_is_plain_text_and_close_reports_a_stop():
    renderer, out, _ = make(interval_s=None, every_percent=10)
    interrupter = Interrupter()
    renderer.start(3, interrupter)
    drive(renderer, "train", 1, 3, num_iterations=20)
    interrupter.stop("Training stopped by the user (q)")
    renderer.close()
    renderer.close()  # idempotent
    text = out.getvalue()
    assert "\x1b" not in text
    assert text.endswith("Training stopped: Training stopped by the user (q).\n")
    assert text.count("Training stopped:") == 1


def test_text_metrics_and_tiny_values_are_printed():
    renderer, out, _ = make(interval_s=None, every_percent=50)
    renderer.start(1, Interrupter())
    progress = TrainingProgress(1, 1, 3, 30, 60)
    renderer.render(RenderSnapshot("valid", progress, {"LR": (2e-5, 2e-5)}, {"Speed": "9 it/s"}))
    assert out.getvalue().splitlines()[1] == (
        "[valid] epoch 1/1 | iteration 3 | items 30/60 (50.0%) | LR 2e-05 (epoch 2e-05)"
        " | Speed 9 it/s"
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"interval_s": 0}, r"`interval_s` must be > 0 or None\. Received: interval_s=0\."),
        ({"every_percent": 100}, r"`every_percent` must be in \(0, 100\) or None\. Received"),
    ],
)
def test_invalid_settings_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CliMetricsRenderer(**kwargs)


def test_invalid_calls_are_rejected():
    renderer, _, _ = make()
    with pytest.raises(
        ValueError, match=r"`num_epochs` must be an int >= 1\. Received: num_epochs=0"
    ):
        renderer.start(0, Interrupter())
    renderer.start(1, Interrupter())
    with pytest.raises(
        ValueError,
        match=r"`split` must be one of \('train', 'valid', 'test'\)\. Received: split='holdout'",
    ):
        renderer.end_epoch("holdout", 1, {})


def test_a_validation_inside_an_epoch_is_timed_from_its_own_start():
    """`start_split` marks where a split's epoch begins: a validation inside a training epoch
    says its own duration, and the training epoch's line still times the whole epoch."""
    renderer, out, clock = make(interval_s=None)
    renderer.start(1, Interrupter())
    renderer.start_split("train")
    clock.now += 30.0  # training up to the validation
    renderer.start_split("valid")
    clock.now += 2.0
    renderer.end_epoch("valid", 1, {"Loss": 0.5})
    clock.now += 10.0  # the rest of the training epoch
    renderer.end_epoch("train", 1, {"Loss": 0.4})
    valid, train = out.getvalue().splitlines()[1:]
    assert valid.startswith("[valid] epoch 1/1 done in 2.0s")
    assert train.startswith("[train] epoch 1/1 done in 42.0s")
