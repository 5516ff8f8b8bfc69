"""`valid_every(k)`: validations inside epochs, each its own `valid/epoch-N`; the logs, the
summary, checkpoint strategies and early stopping see every one; training goes on exactly as
without them; a stopped run resumes bit-identically (SIGKILL versions: test_crash_resume.py)."""

from __future__ import annotations

import io
import json

import pytest
import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.module import load_record
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import (
    Aggregate,
    Learner,
    LearnerBuilder,
    LearnerSummary,
    MetricEarlyStoppingStrategy,
    MetricStore,
    Split,
    StoppingCondition,
    SupervisedTraining,
)
from burnish.train.checkpoint import CheckpointId
from burnish.train.checkpoint.file import FileCheckpointer
from burnish.train.logger import FileMetricLogger
from burnish.train.logger.validations import read_validations
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import MnistBatcher, mnist
from tests.train import scripted
from tests.train.helpers import Mlp, loaders

KINDS = ["LearnerBuilder", "SupervisedTraining"]
DATA = {"batch_size": 32, "train_items": 320, "valid_items": 64}  # 10 iterations an epoch


class NoisyMlp(Mlp):
    """Dropout in training; validation draws random numbers too, and every training step
    records the mode it ran in."""

    def __init__(self) -> None:
        super().__init__(dropout=0.3)
        self.modes: list[bool] = []

    def train_step(self, batch):
        self.modes.append(self.training)
        return super().train_step(batch)

    def valid_step(self, batch):
        torch.rand(3)  # a draw a validation must not take from training
        return super().valid_step(batch)


def fit(kind, directory, configure, seed=3, shuffled_valid=False):
    bn.seed(seed)
    model = NoisyMlp()
    optim = AdamConfig().init()
    data = loaders(**DATA)
    if shuffled_valid:  # each validation sees its batches in another order
        items = PartialDataset(mnist("test"), 0, DATA["valid_items"])
        data = data[0], DataLoaderBuilder(MnistBatcher()).batch_size(32).shuffle(7).build(items)

    def settings(builder):
        builder = (
            builder.metrics(AccuracyMetric(), LossMetric())
            .with_file_checkpointer(DefaultRecorder())
            .renderer(CliMetricsRenderer(file=io.StringIO()))
        )
        return configure(builder)

    if kind == "LearnerBuilder":
        return settings(LearnerBuilder(directory)).build(model, optim, 1e-3).fit(*data)
    return settings(SupervisedTraining(directory, *data)).launch(Learner(model, optim, 1e-3))


def files(directory, split) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted((directory / split).rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("kind", KINDS)
def test_each_validation_is_its_own_valid_epoch(kind, tmp_path):
    result = fit(kind, tmp_path, lambda b: b.num_epochs(2).valid_every(4).summary())

    # Steps 4 and 8 inside epoch 1, its end (10), then 12, 16 and the end of epoch 2 (20).
    assert (result.validations, result.iterations, result.epochs_completed) == (6, 20, 2)
    points = read_validations(tmp_path / "valid")
    where = [(p.validation, p.epoch, p.iteration, p.optimizer_steps, p.epoch_end) for p in points]
    assert where == [
        (1, 1, 4, 4, False),
        (2, 1, 8, 8, False),
        (3, 1, 10, 10, True),
        (4, 2, 2, 12, False),
        (5, 2, 6, 16, False),
        (6, 2, 10, 20, True),
    ]  # fmt: skip
    # Burn's layout: one directory per validation, each with its lines and epoch values.
    valid = FileMetricLogger(tmp_path / "valid")
    assert valid.epochs() == 6
    for number in range(1, 7):
        assert len(valid.read_numeric("Loss", number)) == 2  # 64 items in batches of 32
        assert set(valid.read_aggregates(number) or {}) == {"Accuracy", "Loss"}
    assert FileMetricLogger(tmp_path / "train").epochs() == 2
    store = MetricStore.from_dir(tmp_path)
    assert len(store.values("Loss", Aggregate.MEAN, Split.VALID)) == 6
    # The summary: train over its 2 epochs, valid over its 6 validations.
    summary = result.summary
    assert (summary.epochs, summary.validations) == (2, 6)
    valid_loss = next(m for m in summary.metrics.valid if m.name == "Loss")
    assert [entry.step for entry in valid_loss.entries] == [1, 2, 3, 4, 5, 6]
    assert "Total Epochs: 2\nValidations: 6 " in str(summary)
    assert str(LearnerSummary.from_dir(tmp_path, ["Accuracy", "Loss"])) == str(summary)


@pytest.mark.parametrize("kind", KINDS)
def test_training_goes_on_exactly_as_without_validations_inside(kind, tmp_path):
    """Validation draws random numbers and runs the model in eval mode; training after it
    draws the same dropout masks and runs in train mode, so parameters and train logs are
    those of a run that validated at epoch ends only."""
    plain = fit(kind, tmp_path / "plain", lambda b: b.num_epochs(2))
    inside = fit(kind, tmp_path / "inside", lambda b: b.num_epochs(2).valid_every(3))
    assert (plain.validations, inside.validations) == (2, 8)
    for name, tensor in plain.model.state_dict().items():
        assert torch.equal(tensor, inside.model.state_dict()[name]), name
    assert files(tmp_path / "inside", "train") == files(tmp_path / "plain", "train")
    assert len(inside.model.modes) == 20 and all(inside.model.modes)


def scripted_fit(directory, configure=lambda b: b, **options):
    configured = configure(scripted.builder(directory, **options))
    return scripted.build(configured).fit(*scripted.loaders())


def test_strategies_and_early_stopping_decide_after_every_validation(tmp_path):
    """4 iterations an epoch, a validation every 2 steps: the scripted losses 5, 4, 3, 9, 9
    make validation 3 (epoch 2, iteration 2) the best, and early stopping (2 without
    improvement) ends the run at validation 5, inside epoch 3."""
    result = scripted_fit(tmp_path, lambda b: b.valid_every(2))
    assert (result.epochs_completed, result.stopped_early, result.validations) == (3, True, 5)
    assert result.iterations == 10
    # Keep-last-2 holds validations 4 (epoch 2's end) and 5 (the end), the best holds 3.
    assert scripted.checkpoints(tmp_path) == ["epoch-2", "epoch-2-iteration-2", "epoch-3"]
    assert FileMetricLogger(tmp_path / "valid").epochs() == 5
    # The run ended inside epoch 3: that epoch is closed where it stopped.
    assert len(FileMetricLogger(tmp_path / "train").read_numeric("Loss", 3)) == 2
    assert (tmp_path / "train" / "epoch-3" / "aggregates.json").is_file()

    # The best checkpoint holds the model of step 6 (as a run of 6 steps ends).
    six = scripted_fit(tmp_path / "six", lambda b: b.max_iterations(6), stop=False)
    best = FileCheckpointer(tmp_path / "checkpoint", DefaultRecorder()).load(CheckpointId(2, 2))
    model = scripted.Regression()
    load_record(model, best["model"])
    for name, tensor in six.model.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name

    # Resumed, the run that stopped early trains nothing.
    shown = io.StringIO()
    again = scripted_fit(
        tmp_path, lambda b: b.valid_every(2).resume().renderer(CliMetricsRenderer(file=shown))
    )
    assert (again.epochs_completed, again.stopped_early, again.validations) == (3, True, 5)
    assert "nothing left to train (early stopping ended it)" in shown.getvalue()


def test_best_only_keeps_the_best_validation_inside_an_epoch(tmp_path):
    scripted_fit(tmp_path, lambda b: b.valid_every(2), strategy_name="metric")
    assert scripted.checkpoints(tmp_path) == ["epoch-2-iteration-2", "epoch-3"]


class StopAt(LossMetric):
    """Asks the learner to stop at the `at`-th update of this metric (like Ctrl-C)."""

    def __init__(self, interrupter, at, name="StopAt"):
        super().__init__()
        self.name, self.interrupter, self.at, self.seen = name, interrupter, at, 0

    def update(self, item, metadata):
        self.seen += 1
        if self.seen == self.at:
            self.interrupter.stop("test")
        return super().update(item, metadata)


@pytest.mark.parametrize(
    ("split", "at"),
    [
        ("train", 3),  # between validations
        ("train", 4),  # at the step of validation 1: the stop comes first, it is still due
        ("train", 12),  # inside epoch 2, just after validation 4
        ("valid", 3),  # during validation 2 (its first batch, after validation 1's two)
        ("valid", 6),  # during validation 3, the epoch's own
    ],
)
def test_a_run_stopped_anywhere_resumes_bit_identically(split, at, tmp_path):
    """The validation loader is shuffled: a validation redone sees its batches in its order."""

    def inside(b):
        return b.num_epochs(2).valid_every(4).checkpoint_every(5)

    expected = fit("LearnerBuilder", tmp_path / "straight", inside, shuffled_valid=True)

    def stopping(b):
        stop = StopAt(b.interrupter(), at)
        return (
            inside(b).metric_train_numeric(stop)
            if split == "train"
            else inside(b).metric_valid_numeric(stop)
        )

    stopped = fit("LearnerBuilder", tmp_path / "run", stopping, shuffled_valid=True)
    assert stopped.interrupted
    resumed = fit(
        "LearnerBuilder", tmp_path / "run", lambda b: inside(b).resume(), shuffled_valid=True
    )
    assert (resumed.validations, resumed.iterations) == (6, 20)
    for name, tensor in expected.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for split_name in ("train", "valid"):
        actual = without_stop(files(tmp_path / "run", split_name))
        assert actual == without_stop(files(tmp_path / "straight", split_name))


def without_stop(logged: dict[str, bytes]) -> dict[str, object]:
    """The logs as a run without the `StopAt` metric writes them (aggregates parsed)."""
    kept: dict[str, object] = {}
    for name, data in logged.items():
        if "StopAt" in name:
            continue
        if name.endswith("aggregates.json"):
            document = json.loads(data)
            document["metrics"].pop("StopAt", None)
            kept[name] = document
        else:
            kept[name] = data
    return kept


def test_early_stopping_must_watch_a_valid_metric_with_valid_every():
    early_stopping = MetricEarlyStoppingStrategy(
        "Loss", Aggregate.MEAN, "lowest", Split.TRAIN, StoppingCondition.no_improvement_since(2)
    )
    builder = (
        LearnerBuilder("unused")
        .metrics(LossMetric())
        .early_stopping(early_stopping)
        .valid_every(10)
    )
    with pytest.raises(ValueError, match=r"With `valid_every\(10\)`, `early_stopping` decides"):
        builder.build(Mlp(), AdamConfig().init(), 1e-3)


def test_the_validations_file_is_cut_back_on_resume_and_rejects_damage(tmp_path):
    from burnish.train.components.mid_epoch import MidEpochValidation
    from burnish.train.logger.validations import ValidationPoint, write_validations

    points = [ValidationPoint(n, 1, 2 * n, 2 * n, False) for n in (1, 2, 3)]
    write_validations(tmp_path, points)
    validation = MidEpochValidation(2, tmp_path)
    validation.restore(2)  # the checkpoint had 2 validations: the third is redone
    assert read_validations(tmp_path) == points[:2]
    (tmp_path / "validations.json").write_text(json.dumps({"validations": [{"validation": 1}]}))
    with pytest.raises(ValueError, match=r"validations\.json is not a validations file"):
        read_validations(tmp_path)
    MidEpochValidation(2, tmp_path).restore(0)  # damaged: written anew
    assert read_validations(tmp_path) == []


@pytest.mark.parametrize("at", [7, 12])  # after validation 1; after validation 4, in epoch 2
def test_trackers_of_a_stopped_run_resumed_equal_an_uninterrupted_runs(at, tmp_path):
    """The trackers get validation N's values at epoch N; a resumed run keeps those of the
    validations done before its checkpoint and logs the others once."""
    import csv

    from burnish.train.logger import CsvLogger

    def inside(b, directory):
        return (
            b.num_epochs(2)
            .valid_every(4)
            .checkpoint_every(5)
            .log_to(CsvLogger(directory / "metrics.csv"))
            .log_every(2)
        )

    def table(directory):
        with open(directory / "metrics.csv", newline="") as file:
            rows = [tuple(row.values()) for row in csv.DictReader(file)]
        assert len({row[:4] for row in rows}) == len(rows), "a point logged twice"
        return rows

    straight, run = tmp_path / "straight", tmp_path / "run"
    fit("LearnerBuilder", straight, lambda b: inside(b, straight))
    valid_epochs = {row[0] for row in table(straight) if row[1] == "" and row[2] == "valid"}
    assert valid_epochs == {str(n) for n in range(1, 7)}
    stopped = fit(
        "LearnerBuilder",
        run,
        lambda b: inside(b, run).metric_train_numeric(StopAt(b.interrupter(), at)),
    )
    assert stopped.interrupted
    fit("LearnerBuilder", run, lambda b: inside(b, run).resume())
    # The same points (their order follows the read-backs, which the stop's checkpoint moves).
    assert sorted(r for r in table(run) if r[3] != "StopAt") == sorted(table(straight))
