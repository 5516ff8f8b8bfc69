"""Listeners log values of their own (`event.log(name, value)`, Lightning's `self.log` in a
callback): in the split's metric log, in the epoch aggregates the summary reads, and in every
tracker; a value logged at an epoch's end is that epoch's value, values logged per iteration
average. Real MNIST runs of the MLP, real files, a real CSV tracker."""

from __future__ import annotations

import csv

import pytest
import torch

from burnish.optim import AdamConfig
from burnish.train import LearnerSummary, TrainingListener
from burnish.train.logger import CsvLogger, FileMetricLogger
from burnish.train.split import Split

from tests.train.helpers import Mlp, builder, loaders


class WeightNorm(TrainingListener):
    """Logs the first layer's weight norm at every 4th training iteration (a host float
    read at a read-back point of its own choosing) and a validation score at each
    validation's end (a one-element tensor)."""

    def __init__(self) -> None:
        self.iteration_values: dict[int, list[float]] = {}
        self.validation_values: dict[int, float] = {}

    def on_iteration_end(self, event):
        if event.split is Split.TRAIN and event.iteration % 4 == 0:
            value = float(event.model.linear1.weight.detach().norm())
            event.log("Weight Norm", value)
            self.iteration_values.setdefault(event.epoch, []).append(value)

    def on_validation_end(self, event):
        score = torch.tensor([event.values["Loss"] * 2.0 + event.epoch])
        event.log("Score", score)
        self.validation_values[event.epoch] = float(score)


def _fit(tmp_path, listener, trackers=()):
    train, valid = loaders(train_items=640, valid_items=128)
    learner_builder = builder(tmp_path, epochs=2).with_listener(listener).summary()
    if trackers:
        learner_builder = learner_builder.log_to(*trackers)
    learner = learner_builder.build(Mlp(), AdamConfig().init(), 1e-3)
    return learner.fit(train, valid)


def test_logged_values_reach_the_logs_the_summary_and_the_trackers(tmp_path):
    listener = WeightNorm()
    csv_path = tmp_path / "metrics.csv"
    result = _fit(tmp_path, listener, [CsvLogger(csv_path, iterations=False)])
    train_log, valid_log = (
        FileMetricLogger(tmp_path / "train"),
        FileMetricLogger(tmp_path / "valid"),
    )
    for epoch in (1, 2):
        lines = train_log.read_numeric("Weight Norm", epoch)
        assert [entry.value for entry in lines] == pytest.approx(listener.iteration_values[epoch])
        assert all(entry.count == 1 for entry in lines)
        [score] = valid_log.read_numeric("Score", epoch)
        assert score.value == pytest.approx(listener.validation_values[epoch])
    summary = LearnerSummary.from_dir(tmp_path)  # the aggregates on disk
    assert "Weight Norm" in [metric.name for metric in summary.metrics.train]
    assert result.summary is not None  # the one fit prints has them too
    assert "Weight Norm" in [metric.name for metric in result.summary.metrics.train]
    assert "Score" in [metric.name for metric in result.summary.metrics.valid]
    [score_summary] = [metric for metric in summary.metrics.valid if metric.name == "Score"]
    assert [e.value for e in score_summary.entries] == pytest.approx(
        [listener.validation_values[1], listener.validation_values[2]]
    )
    with csv_path.open() as file:
        table = [row for row in csv.DictReader(file) if row["iteration"] == ""]
    tracked = {(r["split"], r["metric"], int(r["epoch"])): float(r["value"]) for r in table}
    for epoch in (1, 2):
        mean = sum(listener.iteration_values[epoch]) / len(listener.iteration_values[epoch])
        assert tracked["train", "Weight Norm", epoch] == pytest.approx(mean)
        assert tracked["valid", "Score", epoch] == pytest.approx(listener.validation_values[epoch])
        assert ("valid", "Loss", epoch) in tracked  # beside the metrics


class Collides(TrainingListener):
    def on_epoch_end(self, event):
        event.log("Loss", 1.0)


class NotANumber(TrainingListener):
    def on_epoch_end(self, event):
        event.log("Text", "high")


class Vector(TrainingListener):
    def on_epoch_end(self, event):
        event.log("Vector", torch.ones(3))


@pytest.mark.parametrize(
    ("listener", "message"),
    [
        (Collides(), r"'Loss' is already a metric of this split: log the value under another"),
        (NotANumber(), r"The value logged as 'Text' is a str: log a number"),
        (Vector(), r"'Vector' has 3 elements \(shape \(3,\)\): log one number"),
    ],
)
def test_a_value_that_cannot_be_logged_says_why(tmp_path, listener, message):
    with pytest.raises(ValueError, match=message):
        _fit(tmp_path, listener)


def test_log_outside_a_split_event_is_refused():
    from burnish.train import ValidationEndEvent
    from burnish.train.interrupter import Interrupter

    event = ValidationEndEvent(
        epoch=1, step=1, interrupter=Interrupter(), split=Split.VALID, iteration=1,
        values={}, model=Mlp(),
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="only during fit"):
        event.log("Score", 1.0)


def test_log_in_an_event_of_no_split_says_where_it_works(tmp_path):
    class AtStart(TrainingListener):
        def on_fit_start(self, event):
            event.log("Seed", 1.0)

    with pytest.raises(TypeError, match=r"in FitStartEvent: a value is logged in a split's"):
        _fit(tmp_path, AtStart())
