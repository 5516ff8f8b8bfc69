"""Burn main's `SupervisedTraining` + `Learner(model, optim, lr_scheduler)` beside the book's
`LearnerBuilder`: the same options, the same loop, the same artifacts and results."""

from __future__ import annotations

import inspect

import pytest
import torch

import burnish as bn
from burnish.lr_scheduler import CosineAnnealingLrSchedulerConfig
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import Learner, LearnerBuilder, SupervisedTraining
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer
from burnish.train.settings.builder import TrainingBuilder

from tests.train.helpers import Mlp, loaders

# Burn main's `SupervisedTraining` setting methods (crates/burn-train/src/learner/supervised/
# paradigm.rs) that burnish has under the same name, and the book's `with_file_checkpointer`.
BURN_NAMES = [
    "with_training_strategy",
    "gradient_checkpointing",
    "with_metric_logger",
    "with_checkpointing_strategy",
    "renderer",
    "metrics",
    "metrics_text",
    "metric_train",
    "metric_valid",
    "grads_accumulation",
    "metric_train_numeric",
    "metric_valid_numeric",
    "num_epochs",
    "checkpoint",
    "interrupter",
    "with_interrupter",
    "early_stopping",
    "with_application_logger",
    "summary",
    "with_file_checkpointer",
]


def files(directory):
    """Every metric log and aggregates file of a run: relative path -> text."""
    return {
        str(path.relative_to(directory)): path.read_text()
        for split in ("train", "valid")
        for path in sorted((directory / split).rglob("*"))
        if path.is_file()
    }


def scheduler():
    return CosineAnnealingLrSchedulerConfig(1e-2, 20).init()


def test_supervised_training_trains_exactly_as_the_learner_builder(tmp_path):
    train, valid = loaders(train_items=320, valid_items=128)
    bn.seed(4)
    book = (
        LearnerBuilder(tmp_path / "book")
        .metrics(AccuracyMetric(), LossMetric())
        .with_file_checkpointer(DefaultRecorder())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .build(Mlp(dropout=0.2), AdamConfig().init(), scheduler())
        .fit(train, valid)
    )

    train, valid = loaders(train_items=320, valid_items=128)
    bn.seed(4)
    main = (
        SupervisedTraining(tmp_path / "main", train, valid)
        .metrics(AccuracyMetric(), LossMetric())
        .with_file_checkpointer(DefaultRecorder())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .launch(Learner(Mlp(dropout=0.2), AdamConfig().init(), scheduler()))
    )

    assert main.epochs_completed == book.epochs_completed == 2
    for (name, a), (_, b) in zip(
        book.model.state_dict().items(), main.model.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    book_logs, main_logs = files(tmp_path / "book"), files(tmp_path / "main")
    assert "train/epoch-2/Accuracy.log" in book_logs and "valid/epoch-2/Loss.log" in book_logs
    assert main_logs == book_logs
    checkpoints = sorted(p.name for p in (tmp_path / "main/checkpoint").iterdir())
    assert checkpoints == sorted(p.name for p in (tmp_path / "book/checkpoint").iterdir())

    # Resume works through the same options: the ended run trains nothing more.
    bn.seed(4)
    again = (
        SupervisedTraining(tmp_path / "main", train, valid)
        .metrics(AccuracyMetric(), LossMetric())
        .with_file_checkpointer(DefaultRecorder())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .resume()
        .launch(Learner(Mlp(dropout=0.2), AdamConfig().init(), scheduler()))
    )
    assert again.epochs_completed == 2
    for a, b in zip(again.model.parameters(), main.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_metrics_registers_each_metric_on_both_splits_with_its_own_state():
    accuracy = AccuracyMetric()
    builder = LearnerBuilder("unused").metrics(accuracy, LossMetric())
    train, valid = builder._settings.metrics.values()
    assert [m.name for m in train] == [m.name for m in valid] == ["Accuracy", "Loss"]
    assert train[0] is accuracy and valid[0] is not accuracy
    with pytest.raises(ValueError, match="already registered"):
        builder.metrics(AccuracyMetric())


def test_metrics_refuses_a_text_metric_and_names_metrics_text():
    class Note(bn.train.metric.Metric):
        name = "Note"

        def update(self, item, metadata):
            return None

        def clear(self):
            pass

    with pytest.raises(TypeError, match="metrics_text"):
        SupervisedTraining("unused", [1], [1]).metrics(Note())
    builder = SupervisedTraining("unused", [1], [1]).metrics_text(Note())
    assert [m.name for m in builder._settings.metrics[bn.train.Split.VALID]] == ["Note"]


def test_both_builders_have_burns_names_written_once():
    for name in BURN_NAMES:
        assert callable(getattr(SupervisedTraining, name)), name
    # Every setting is defined once, on the shared base: neither builder redefines one.
    shared = {n for n, _ in inspect.getmembers(TrainingBuilder, inspect.isfunction)}
    for builder in (LearnerBuilder, SupervisedTraining):
        own = {n for n in vars(builder) if not n.startswith("__")}
        assert own & shared == set(), builder
    # (dunders aside: `inspect.getmembers` gives a class an empty `__annotations__`)
    assert {n for n in vars(SupervisedTraining) if not n.startswith("__")} == {"launch"}
    assert {"resume", "mixed_precision", "compile", "strategy", "log_to"} <= shared


def test_launch_errors_name_the_fix(tmp_path):
    train, valid = loaders(train_items=64, valid_items=64)
    training = SupervisedTraining(tmp_path, train, valid).renderer(CliMetricsRenderer())
    with pytest.raises(TypeError, match=r"Learner\(model, optim, lr_scheduler\)"):
        training.launch(Mlp())
    with pytest.raises(RuntimeError, match="SupervisedTraining"):
        Learner(Mlp(), AdamConfig().init(), 1e-3).fit(train, valid)
    built = LearnerBuilder(tmp_path / "b").build(Mlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(RuntimeError, match=r"LearnerBuilder\.build"):
        training.launch(built)
    learner = Learner(Mlp(), AdamConfig().init(), 1e-3)
    training.launch(learner)
    with pytest.raises(RuntimeError, match="already called"):
        training.launch(learner)
    with pytest.raises(ValueError, match="needs a train data loader"):
        SupervisedTraining(tmp_path, None, valid)
