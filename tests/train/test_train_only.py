"""A fit without validation (train_only.py): `learner.fit(train)`, `SupervisedTraining(dir,
train)`. No valid split runs: no `valid/` logs, train rows only in the summary and on the
console, checkpoints numbered by epoch, an exact resume after SIGKILL; the settings that need
validation are refused before anything is written, each named; the evaluator is unaffected."""

from __future__ import annotations

import io
import signal

import pytest
import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import (
    Aggregate,
    Direction,
    EvaluatorBuilder,
    Learner,
    LearnerBuilder,
    LearnerSummary,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
    SupervisedTraining,
)
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import MnistBatcher, mnist
from tests.train import scripted
from tests.train.helpers import Mlp, loaders
from tests.train.test_crash_resume import assert_same_run, logs, run


def configured(directory, console: io.StringIO, epochs: int = 2):
    return (
        LearnerBuilder(directory)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(CliMetricsRenderer(file=console))
        .with_file_checkpointer(DefaultRecorder())
        .num_epochs(epochs)
        .summary()
    )


def parameters(model) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def test_a_fit_without_validation_trains_and_logs_the_train_split_only(tmp_path):
    train, _ = loaders()
    console = io.StringIO()
    bn.seed(1)
    model = Mlp()
    before = parameters(model)
    learner = configured(tmp_path, console).build(model, AdamConfig().init(), 1e-3)
    result = learner.fit(train)
    assert (result.epochs_completed, result.iterations, result.validations) == (2, 20, 0)
    assert not result.interrupted and not result.stopped_early
    assert any(not torch.equal(before[k], v) for k, v in parameters(result.model).items())
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".burnish.lock", "checkpoint", "experiment.log", "train",
    ]  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "train").iterdir()) == ["epoch-1", "epoch-2"]
    for epoch in (1, 2):
        lines = (tmp_path / "train" / f"epoch-{epoch}" / "Loss.log").read_text().splitlines()
        assert len(lines) == 11 and lines[-1].endswith(",final")  # per iteration, epoch
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["epoch-1", "epoch-2"]
    text = console.getvalue()
    assert "[train] epoch 2/2" in text and "[valid]" not in text
    assert "metric logs in train/," in text and "valid/" not in text
    for summary in (result.summary, LearnerSummary.from_dir(tmp_path)):
        assert summary is not None and summary.epochs == 2
        assert [m.name for m in summary.metrics.train] == ["Accuracy", "Loss"]
        assert summary.metrics.valid == []
        assert "| Valid" not in str(summary) and "| Train | Loss" in str(summary)


def test_supervised_training_and_build_leave_the_validation_loader_out(tmp_path):
    """Burn's `SupervisedTraining::new(dir, train, valid)` takes both; burnish's may take the
    train loader alone, and so may `build(..., dataloader_train)` then `fit()`: the same run,
    bit for bit, as `fit(train, None)`."""
    trained = {}
    for form in ("fit", "supervised", "build"):
        train, _ = loaders()
        console = io.StringIO()
        bn.seed(1)
        model, optim = Mlp(), AdamConfig().init()
        directory = tmp_path / form
        if form == "supervised":
            training = SupervisedTraining(directory, train).metrics(AccuracyMetric(), LossMetric())
            training = training.renderer(CliMetricsRenderer(file=console)).num_epochs(2)
            result = training.launch(Learner(model, optim, 1e-3))
        elif form == "build":
            result = configured(directory, console).build(model, optim, 1e-3, train).fit()
        else:
            result = configured(directory, console).build(model, optim, 1e-3).fit(train, None)
        assert result.validations == 0 and not (directory / "valid").exists()
        trained[form] = parameters(result.model)
    for form in ("supervised", "build"):
        for key, tensor in trained["fit"].items():
            assert torch.equal(tensor, trained[form][key]), (form, key)


def test_a_model_without_valid_step_trains_without_validation(tmp_path):
    class TrainOnly(Mlp):
        valid_step = None  # type: ignore[assignment]

    train, valid = loaders()
    builder = (
        LearnerBuilder(tmp_path)
        .metrics(LossMetric())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
    )
    assert builder.build(TrainOnly(), AdamConfig().init(), 1e-3).fit(train).epochs_completed == 1
    with pytest.raises(TypeError, match="has no `valid_step"):
        builder.build(TrainOnly(), AdamConfig().init(), 1e-3).fit(train, valid)


def stopping(split: Split) -> MetricEarlyStoppingStrategy:
    condition = StoppingCondition.no_improvement_since(2)
    return MetricEarlyStoppingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, split, condition)


REFUSED = {
    "metric_valid_numeric": (
        lambda b: b.metric_valid_numeric(AccuracyMetric()),
        "the valid metric 'Accuracy' (`metric_valid_numeric`/`metric_valid`",
    ),
    "metric_valid": (
        lambda b: b.metric_valid(LossMetric()),
        "the valid metric 'Loss' (`metric_valid_numeric`/`metric_valid`",
    ),
    "early_stopping": (
        lambda b: b.metrics(LossMetric()).early_stopping(stopping(Split.VALID)),
        "`early_stopping` watching the valid metric 'Loss'",
    ),
    "with_checkpointing_strategy": (
        lambda b: b.metrics(LossMetric()).with_checkpointing_strategy(
            MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
        ),
        "`with_checkpointing_strategy` watching the valid metric 'Loss'",
    ),
    "valid_every": (lambda b: b.metrics(LossMetric()).valid_every(5), "`valid_every(5)`"),
    "with_ema": (
        lambda b: b.metrics(LossMetric()).with_ema(0.9, validate="both"),
        "`with_ema(..., validate='both')`",
    ),
}


@pytest.mark.parametrize("setting", REFUSED)
def test_a_setting_that_needs_validation_is_refused_before_anything_is_written(tmp_path, setting):
    add, named = REFUSED[setting]
    train, valid = loaders()
    base = LearnerBuilder(tmp_path / "run").with_file_checkpointer(DefaultRecorder())
    base = base.renderer(CliMetricsRenderer(file=io.StringIO()))
    learner = add(base).build(Mlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(ValueError) as raised:
        learner.fit(train)
    message = str(raised.value)
    assert "no validation data loader (`dataloader_valid` is None)" in message
    assert named in message and "Pass a validation data loader" in message
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="need validation"):  # SupervisedTraining: the same
        add(SupervisedTraining(tmp_path / "run", train)).launch(
            Learner(Mlp(), AdamConfig().init(), 1e-3)
        )
    assert learner.fit(train, valid).validations >= 1  # with validation: it trains


def test_train_metrics_drive_early_stopping_and_the_best_checkpoint(tmp_path):
    """Early stopping and best-by-metric on a train metric need no validation: the scripted
    train values 5, 4, 3, 9, 9, ... stop the run after epoch 5 and keep epoch 3 as the best."""
    train, _ = scripted.loaders()
    watched = ("Scripted", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN)
    condition = StoppingCondition.no_improvement_since(2)
    learner = scripted.build(
        LearnerBuilder(tmp_path)
        .metric_train_numeric(scripted.ScriptedLoss())
        .with_file_checkpointer(DefaultRecorder())
        .with_checkpointing_strategy(MetricCheckpointingStrategy(*watched))
        .early_stopping(MetricEarlyStoppingStrategy(*watched, condition))
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .num_epochs(8)
    )
    result = learner.fit(train)
    assert (result.epochs_completed, result.stopped_early, result.validations) == (5, True, 0)
    assert scripted.checkpoints(tmp_path) == ["epoch-3", "epoch-5"]  # the best, the last
    assert not (tmp_path / "valid").exists()


def test_a_train_only_run_killed_mid_epoch_resumes_bit_identical(tmp_path):
    """SIGKILL at the 40th of 60 steps (epoch 2; checkpoints every 3 steps, written in the
    background: the last committed one may be 33, 36 or 39), resume: the
    parameters, the optimizer state and every log equal the straight run's."""
    flags = ("--train-only", "--epochs", "2")
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert run(straight / "artifacts", straight / "final.pt", *flags) == 0
    assert "validations=0" in run.last_stdout and "epochs=2" in run.last_stdout
    killed = run(resumed / "artifacts", resumed / "final.pt", *flags, "--kill-at-step", "40")
    assert killed == -signal.SIGKILL and not (resumed / "final.pt").exists()
    assert run(resumed / "artifacts", resumed / "final.pt", *flags) == 0
    trained = int(run.last_stdout.split("trained=")[1].split()[0])
    assert trained <= 30  # from a checkpoint in epoch 2 (33, 36 or 39), not from the start
    assert_same_run(straight / "artifacts", straight / "final.pt", resumed / "artifacts",
                    resumed / "final.pt")  # fmt: skip
    assert not (resumed / "artifacts" / "valid").exists()
    assert len(logs(resumed / "artifacts")) == 2 * 3  # train only: 2 logs + aggregates a epoch


def test_the_evaluator_tests_a_model_trained_without_validation(tmp_path):
    train, _ = loaders()
    bn.seed(1)
    console = io.StringIO()
    result = configured(tmp_path, console).build(Mlp(), AdamConfig().init(), 1e-3).fit(train)
    test = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(64)
        .build(PartialDataset(mnist("test"), 0, 128))
    )
    evaluator = (
        EvaluatorBuilder(tmp_path)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(CliMetricsRenderer(file=console))
        .build(result.model)
    )
    evaluator.eval("mnist-test", test)
    assert (tmp_path / "test" / "mnist-test").is_dir() and not (tmp_path / "valid").exists()
    summary = LearnerSummary.from_dir(tmp_path)
    assert [m.name for m in summary.metrics.test["mnist-test"]] == ["Accuracy", "Loss"]
    assert summary.metrics.valid == [] and len(summary.metrics.train) == 2


def test_resuming_with_or_without_validation(tmp_path):
    """A validated run may continue without validation (its epoch checkpoints go on by
    epoch); a run trained without validation is not resumed with a validation loader."""
    from burnish.errors import ConfigError

    def fitted(directory, epochs: int, validate: bool, resume: bool = False):
        configured_ = configured(directory, io.StringIO(), epochs)
        learner = (configured_.resume() if resume else configured_).build(
            Mlp(), AdamConfig().init(), 1e-3
        )
        train, valid = loaders()
        return learner.fit(train, valid if validate else None)

    fitted(tmp_path / "a", 1, validate=True)
    result = fitted(tmp_path / "a", 2, validate=False, resume=True)
    assert (result.epochs_completed, result.validations) == (2, 1)
    assert scripted.checkpoints(tmp_path / "a") == ["epoch-1", "epoch-2"]
    fitted(tmp_path / "b", 1, validate=False)
    with pytest.raises(ConfigError, match="run trained without validation"):
        fitted(tmp_path / "b", 2, validate=True, resume=True)
    assert scripted.checkpoints(tmp_path / "b") == ["epoch-1"]
    assert not (tmp_path / "b" / "valid").exists()
