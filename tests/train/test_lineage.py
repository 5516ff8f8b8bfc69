"""A run's lineage (issue 40): `checkpoint(N)` with later checkpoints or logs begins a branch,
the part it leaves moves aside into `branches/<n>-from-epoch-N/`, and `resume()` continues the
branch. In-process runs of the MNIST MLP; the SIGKILL sequences are in
test_lineage_properties.py."""

from __future__ import annotations

import io
import json

import pytest
import torch

import burnish as bn
from burnish.errors import ConfigError
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import Interrupter, Split
from burnish.train.checkpoint import KeepLastNCheckpoints
from burnish.train.components.early_stopping import MetricEarlyStoppingStrategy, StoppingCondition
from burnish.train.logger import FileMetricLogger
from burnish.train.metric.store import Aggregate, Direction
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders


class StoppingMlp(Mlp):
    """Asks its interrupter to stop after `at` training steps (Ctrl-C at a chosen moment)."""

    def __init__(self, interrupter: Interrupter, at: int) -> None:
        super().__init__()
        self.interrupter, self.at, self.steps = interrupter, at, 0

    def train_step(self, batch):
        self.steps += 1
        if self.steps == self.at:
            self.interrupter.stop("test")
        return super().train_step(batch)


def fit(
    artifact_dir, epochs, lr=1e-3, start=None, out=None, stopping=None, every=None, stop_at=0,
    trackers=(),
):  # fmt: skip
    """Train the MLP (keeping every epoch checkpoint) from `start` (an epoch, "resume", None),
    with an early-stopping strategy and mid-epoch checkpoints if given; `stop_at`: interrupted
    after that many steps (4 per epoch); `trackers`: `log_to` them (every iteration, the lr as
    the config's param `lr`)."""
    bn.seed(5)
    interrupter = Interrupter()
    model = StoppingMlp(interrupter, stop_at)
    configured = (
        builder(artifact_dir, epochs=epochs, recorder=DefaultRecorder())
        .with_checkpointing_strategy(KeepLastNCheckpoints(10))
        .renderer(CliMetricsRenderer(file=out or io.StringIO()))
        .deterministic()
        .with_interrupter(interrupter)
    )
    if stopping is not None:
        configured = configured.early_stopping(stopping)
    if every is not None:
        configured = configured.checkpoint_every(every)
    if trackers:
        configured = configured.log_to(*trackers, config={"lr": lr}).log_every(1)
    if start == "resume":
        configured = configured.resume()
    elif start is not None:
        configured = configured.checkpoint(start)
    learner = configured.build(model, AdamConfig().init(), lr)
    return learner.fit(*loaders(batch_size=64, train_items=256, valid_items=64))


def files(directory, *names):
    """Every file under the named subdirectories, by relative path."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for name in names
        for path in sorted((directory / name).rglob("*"))
        if path.is_file()
    }


def parameters(result):
    return {name: tensor.clone() for name, tensor in result.model.state_dict().items()}


def assert_same_parameters(expected, actual):
    assert expected.keys() == actual.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, actual[name]), name


def test_resume_after_a_branch_continues_the_branch_not_the_abandoned_line(tmp_path):
    # The straight run the branch's line describes: 2 epochs at 1e-3, a third at 3e-3.
    straight = tmp_path / "straight"
    fit(straight, 2)
    expected = parameters(fit(straight, 3, lr=3e-3, start="resume"))

    run = tmp_path / "run"
    original = parameters(fit(run, 4))
    said = io.StringIO()
    branch = fit(run, 3, lr=3e-3, start=2, out=said)
    assert "Branching from checkpoint epoch-2 (line 1)" in said.getvalue()
    assert_same_parameters(expected, parameters(branch))

    said = io.StringIO()
    resumed = fit(run, 3, lr=3e-3, start="resume", out=said)
    assert "already complete: 3 epochs" in said.getvalue()
    assert "epoch-4" not in said.getvalue()
    assert_same_parameters(expected, parameters(resumed))
    # The branch's logs are the straight run's; the abandoned part is kept, named.
    assert files(run, "train", "valid") == files(straight, "train", "valid")
    archive = run / "branches" / "1-from-epoch-2"
    assert sorted(p.name for p in (archive / "checkpoint").iterdir()) == ["epoch-3", "epoch-4"]
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == [
        "epoch-1",
        "epoch-2",
        "epoch-3",
    ]
    assert (archive / "train" / "epoch-4").is_dir()
    old = DefaultRecorder().load(archive / "checkpoint" / "epoch-4" / "model")
    assert_same_parameters(original, {name: old[name] for name in original})
    lineage = json.loads((run / "branches" / "lineage.json").read_text())
    assert lineage["current"] == 1
    assert lineage["lines"][-1]["from"] == "epoch-2"
    assert lineage["lines"][-1]["archive"] == "branches/1-from-epoch-2"
    line = DefaultRecorder().load(run / "checkpoint" / "epoch-3" / "learner")["line"]
    assert (line["number"], line["parent"], line["from"]) == (1, 0, "epoch-2")


def loss_rule(split, patience=1):
    return MetricEarlyStoppingStrategy(
        "Loss",
        Aggregate.MEAN,
        Direction.LOWEST,
        split,
        StoppingCondition.no_improvement_since(patience),
    )


def test_a_changed_early_stopping_metric_starts_from_a_clean_state_and_says_so(tmp_path):
    fit(tmp_path, 2, stopping=loss_rule(Split.TRAIN))
    said, rule = io.StringIO(), loss_rule(Split.VALID)
    result = fit(tmp_path, 3, start="resume", out=said, stopping=rule)
    changes = [line for line in said.getvalue().splitlines() if "Early stopping changed" in line]
    assert len(changes) == 1, said.getvalue()
    assert (
        "Loss (train" in changes[0]
        and "now MetricEarlyStoppingStrategy: Loss (valid" in (changes[0])
    )
    assert (result.epochs_completed, result.stopped_early) == (3, False)
    # Its best is the valid loss of the first epoch it saw, not the train loss's old best.
    valid = FileMetricLogger(tmp_path / "valid").read_aggregates(3)
    assert valid is not None
    assert (rule.best_epoch, rule.best_value) == (3, valid["Loss"].mean)


def test_early_stopping_dropped_at_resume_is_said_in_one_line(tmp_path):
    fit(tmp_path, 2, stopping=loss_rule(Split.TRAIN))
    said = io.StringIO()
    result = fit(tmp_path, 3, start="resume", out=said)
    lines = [line for line in said.getvalue().splitlines() if "Early stopping is off" in line]
    assert len(lines) == 1 and "Loss (train" in lines[0], said.getvalue()
    assert (result.epochs_completed, result.stopped_early) == (3, False)


def test_the_same_early_stopping_metric_with_another_patience_keeps_its_best(tmp_path):
    fit(tmp_path, 2, stopping=loss_rule(Split.VALID))
    said, rule = io.StringIO(), loss_rule(Split.VALID, patience=3)
    fit(tmp_path, 2, start="resume", out=said, stopping=rule)
    assert "Early stopping changed" not in said.getvalue()
    valid = FileMetricLogger(tmp_path / "valid")
    means = {epoch: valid.read_aggregates(epoch)["Loss"].mean for epoch in (1, 2)}
    assert rule.best_value == min(means.values())


def test_fewer_epochs_than_the_checkpoint_reached_is_refused_naming_num_epochs(tmp_path):
    # Stopped inside epoch 3 (after its second step: a mid-epoch checkpoint), resumed with 2.
    assert fit(tmp_path, 3, every=2, stop_at=10).interrupted
    newest = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())[-1]
    assert newest == "epoch-3-iteration-2"
    with pytest.raises(ConfigError) as refused:
        fit(tmp_path, 2, start="resume", every=2)
    message = str(refused.value)
    assert "num_epochs(2)" in message and newest in message and "checkpoint(2)" in message
    # The branch it suggests: the end of epoch 2, its model the straight 2-epoch run's.
    straight = parameters(fit(tmp_path / "straight", 2, every=2))
    assert_same_parameters(straight, parameters(fit(tmp_path, 2, start=2, every=2)))
    assert (tmp_path / "branches" / "1-from-epoch-2" / "train" / "epoch-3").is_dir()
