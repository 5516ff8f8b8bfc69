"""End-to-end Learner runs on a small MNIST subset: artifacts, logs, summary, checkpoints,
resume, early stopping, gradient accumulation and misconfiguration errors."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import AdamConfig, SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import (
    Aggregate,
    Direction,
    KeepLastNCheckpoints,
    LearnerBuilder,
    LearnerSummary,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
)
from burnish.train.logger import FileMetricLogger
from burnish.train.metric import LossMetric

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, builder, loaders
from tests.train.scripted import ScriptedLoss


def fit(artifact_dir, epochs=2, recorder=None, dropout=0.0, configure=None, seed=1, **loader_args):
    bn.seed(seed)
    model = Mlp(dropout)
    b = builder(artifact_dir, epochs, recorder)
    if configure is not None:
        b = configure(b)
    learner = b.build(model, AdamConfig().init(), 1e-3)
    return learner.fit(*loaders(**loader_args))


def read_lines(path) -> list[str]:
    """The iteration lines of a metric log (without the `value,final` line ending the epoch)."""
    return iteration_lines(path)


def test_fit_writes_burn_artifact_layout_and_learns(tmp_path):
    result = fit(tmp_path, epochs=2, recorder=DefaultRecorder())
    assert (tmp_path / "experiment.log").is_file()
    for split, iterations in (("train", 10), ("valid", 4)):
        for epoch in (1, 2):
            for name in ("Accuracy", "Loss"):
                path = tmp_path / split / f"epoch-{epoch}" / f"{name}.log"
                lines = read_lines(path)
                assert len(lines) == iterations
                assert all(re.fullmatch(r"-?[0-9.]+,\d+", line) for line in lines)
                # Burn main's last line: the epoch value, as the aggregates keep it.
                value, tag = path.read_text().splitlines()[-1].split(",")
                aggregates = FileMetricLogger(tmp_path / split).read_aggregates(epoch) or {}
                assert tag == "final" and float(value) == aggregates[name].value
    summary = LearnerSummary.from_dir(tmp_path, ["Accuracy", "Loss"])
    text = str(summary)
    assert "Accuracy" in text and "Loss" in text
    assert result.epochs_completed == 2 and not result.interrupted
    valid_accuracy = [
        _epoch_mean(tmp_path / "valid" / f"epoch-{e}" / "Accuracy.log") for e in (1, 2)
    ]
    assert valid_accuracy[1] > 60.0, valid_accuracy  # a 32-unit MLP on 640 images


def _epoch_mean(path) -> float:
    pairs = [tuple(map(float, line.split(","))) for line in read_lines(path)]
    return sum(v * c for v, c in pairs) / sum(c for _, c in pairs)


def test_last_partial_batch_is_counted_with_its_size(tmp_path):
    fit(tmp_path, epochs=1, train_items=100, valid_items=70)
    counts = [int(line.split(",")[1]) for line in read_lines(tmp_path / "valid/epoch-1/Loss.log")]
    assert counts == [64, 6]


def test_checkpoint_retention_keeps_last_two_and_best(tmp_path):
    fit(tmp_path, epochs=4, recorder=DefaultRecorder())
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    best = min(range(1, 5), key=lambda e: _epoch_mean(tmp_path / f"valid/epoch-{e}/Loss.log"))
    assert set(names) == {"epoch-3", "epoch-4", f"epoch-{best}"}
    for name in names:
        assert (tmp_path / "checkpoint" / name / "COMMIT").is_file()


def test_keep_last_n_strategy(tmp_path):
    fit(
        tmp_path,
        epochs=3,
        recorder=DefaultRecorder(),
        configure=lambda b: b.with_checkpointing_strategy(KeepLastNCheckpoints(1)),
    )
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["epoch-3"]


def test_resume_from_epoch_checkpoint_is_exact(tmp_path):
    straight = fit(tmp_path / "straight", epochs=4, recorder=DefaultRecorder(), dropout=0.3)
    fit(tmp_path / "resumed", epochs=2, recorder=DefaultRecorder(), dropout=0.3)
    before = (tmp_path / "resumed/train/epoch-1/Loss.log").read_bytes()
    resumed = fit(
        tmp_path / "resumed",
        epochs=4,
        recorder=DefaultRecorder(),
        dropout=0.3,
        seed=99,
        configure=lambda b: b.checkpoint(2),
    )
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    assert (tmp_path / "resumed/train/epoch-1/Loss.log").read_bytes() == before
    for split in ("train", "valid"):
        for epoch in (3, 4):
            relative = f"{split}/epoch-{epoch}/Loss.log"
            assert (tmp_path / "resumed" / relative).read_bytes() == (
                tmp_path / "straight" / relative
            ).read_bytes()


def test_resume_without_checkpoints_fails_loudly(tmp_path):
    with pytest.raises(bn.CheckpointError, match="does not exist"):
        fit(tmp_path, epochs=2, recorder=DefaultRecorder(), configure=lambda b: b.checkpoint(1))


def test_early_stopping_stops_at_the_first_epoch_without_improvement(tmp_path):
    # The train values are the test's (ScriptedLoss), not a loss that an lr of 0 leaves
    # "unchanged": its epoch mean sums the same items in another order each epoch, and a CPU
    # may then read float noise as an improvement. Epoch 3 equals epoch 2: not better.
    strategy = MetricEarlyStoppingStrategy(
        "Scripted",
        Aggregate.MEAN,
        Direction.LOWEST,
        Split.TRAIN,
        StoppingCondition.no_improvement_since(1),
    )
    bn.seed(1)
    scripted = ScriptedLoss((3.0, 2.0, 2.0, 1.0, 0.5))
    learner = (
        builder(tmp_path, epochs=5)
        .metric_train_numeric(scripted)
        .early_stopping(strategy)
        .build(Mlp(), SgdConfig().init(), 1e-2)
    )
    result = learner.fit(*loaders())
    assert result.stopped_early and result.epochs_completed == 3


def test_gradient_accumulation_equals_a_larger_batch(tmp_path):
    def run(directory, batch_size, accumulation, lr):
        bn.seed(5)
        b = builder(directory, epochs=1)
        if accumulation > 1:
            b = b.grads_accumulation(accumulation)
        learner = b.build(Mlp(), SgdConfig().init(), lr)
        return learner.fit(*loaders(batch_size=batch_size, train_items=256)).model

    # The permutation depends on (seed, epoch) only: two batches of 32 hold the items of one
    # batch of 64. Accumulation sums the two half-batch mean gradients, hence half the lr.
    big = run(tmp_path / "big", 64, 1, 0.1)
    small = run(tmp_path / "small", 32, 2, 0.05)
    for name, tensor in big.state_dict().items():
        torch.testing.assert_close(small.state_dict()[name], tensor, atol=1e-6, rtol=0)


def test_misconfiguration_fails_before_the_first_step(tmp_path):
    with pytest.raises(ValueError, match=r"`num_epochs` must be an integer >= 1"):
        LearnerBuilder(tmp_path).num_epochs(0)
    with pytest.raises(ValueError, match="no valid metric of that name"):
        LearnerBuilder(tmp_path).with_file_checkpointer(DefaultRecorder()).early_stopping(
            MetricEarlyStoppingStrategy(
                LossMetric(),
                Aggregate.MEAN,
                Direction.LOWEST,
                Split.VALID,
                StoppingCondition.no_improvement_since(2),
            )
        ).build(Mlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(TypeError, match="has no `train_step"):
        builder(tmp_path).build(nn.Linear(2, 2), AdamConfig().init(), 1e-3).fit(*loaders())
    with pytest.raises(ValueError, match="need checkpoints"):
        LearnerBuilder(tmp_path).resume().build(Mlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(ValueError, match=r"an epoch \(an integer >= 1\) or 'latest'. .*'last'"):
        LearnerBuilder(tmp_path).checkpoint("last")


class StopAt(LossMetric):
    """A metric that asks the learner to stop at a given training iteration (like Ctrl-C)."""

    def __init__(self, interrupter, iteration):
        super().__init__()
        self.name, self.interrupter, self.at = "StopAt", interrupter, iteration

    def update(self, item, metadata):
        if metadata.iteration == self.at and metadata.epoch == 1:
            self.interrupter.stop("test")
        return super().update(item, metadata)


def test_interrupted_mid_accumulation_then_resumed_is_exact(tmp_path):
    def run(directory, stop_at=None):
        bn.seed(8)
        b = builder(directory, epochs=2, recorder=DefaultRecorder()).grads_accumulation(3).resume()
        if stop_at is not None:
            b = b.metric_train_numeric(StopAt(b.interrupter(), stop_at))
        learner = b.build(Mlp(dropout=0.2), AdamConfig().init(), 1e-3)
        return learner.fit(*loaders(batch_size=32, train_items=320, valid_items=64))

    straight = run(tmp_path / "straight")
    stopped = run(tmp_path / "resumed", stop_at=5)  # 5 = one step done, 2 gradients pending
    assert stopped.interrupted and stopped.epochs_completed == 0
    assert [p.name for p in (tmp_path / "resumed/checkpoint").iterdir()] == ["epoch-1-iteration-5"]
    resumed = run(tmp_path / "resumed")
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for relative in ("train/epoch-1/Loss.log", "valid/epoch-2/Accuracy.log"):
        assert (tmp_path / "resumed" / relative).read_bytes() == (
            tmp_path / "straight" / relative
        ).read_bytes()


def test_the_model_summary_opens_the_experiment_log_and_the_dashboard(tmp_path):
    import io

    from burnish.train.renderer import CliMetricsRenderer

    shown = io.StringIO()
    fit(tmp_path, epochs=1, configure=lambda b: b.renderer(CliMetricsRenderer(file=shown)))
    total = sum(p.numel() for p in Mlp().parameters())  # 784*32 + 32 + 32*10 + 10
    log_text = (tmp_path / "experiment.log").read_text()
    assert "Model summary:" in log_text
    assert f"Total params: {total:,}" in log_text
    assert re.search(r"\| linear1 +\| Linear +\| +25,120 \|", log_text)
    assert f"Total params: {total:,}" in shown.getvalue()
    assert shown.getvalue().index("Model Summary") < shown.getvalue().index("[train]")
