"""`max_iterations(n)`: training ends after n optimizer steps, in whatever epoch, on
`LearnerBuilder` and `SupervisedTraining` alike; the epoch it ends is closed as any epoch is, a
schedule of n steps ends exactly there, and a resume continues to exactly n (the SIGKILL
version is in test_crash_resume.py)."""

from __future__ import annotations

import io
import json

import pytest
import torch

import burnish as bn
from burnish.lr_scheduler import LinearLrSchedulerConfig
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import Learner, LearnerBuilder, SupervisedTraining
from burnish.train.checkpoint.file import FileCheckpointer
from burnish.train.components.step_budget import StepBudget
from burnish.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, loaders

KINDS = ["LearnerBuilder", "SupervisedTraining"]
# 320 items in batches of 32: 10 iterations per epoch.
DATA = {"batch_size": 32, "train_items": 320, "valid_items": 64}


def fit(kind, directory, configure, lr=1e-3, seed=3, shown=None):
    """Train an Mlp with the settings `configure` adds, through either entry point."""
    bn.seed(seed)
    model, optim = Mlp(dropout=0.1), AdamConfig().init()
    data = loaders(**DATA)

    def settings(builder):
        builder = (
            builder.metrics(AccuracyMetric(), LossMetric())
            .metric_train_numeric(LearningRateMetric())
            .with_file_checkpointer(DefaultRecorder())
            .renderer(CliMetricsRenderer(file=shown or io.StringIO()))
        )
        return configure(builder)

    if kind == "LearnerBuilder":
        learner = settings(LearnerBuilder(directory)).build(model, optim, lr)
        return learner.fit(*data), optim
    training = settings(SupervisedTraining(directory, *data))
    return training.launch(Learner(model, optim, lr)), optim


def steps_taken(optim) -> set[int]:
    """Adam's step count of every parameter (the optimizer steps it took)."""
    return {int(state["step"]) for state in optim._states.values()}


def lines(directory, split, name, epoch) -> list[str]:
    return iteration_lines(directory / split / f"epoch-{epoch}" / f"{name}.log")


def metric_logs(directory) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for split in ("train", "valid")
        for path in sorted((directory / split).rglob("*"))
        if path.is_file()
    }


def end_record(directory, checkpoint):
    records = FileCheckpointer(directory / "checkpoint", DefaultRecorder()).load(checkpoint)
    return records["learner"]["end"], records["learner"]["optimizer_steps"]


@pytest.mark.parametrize("kind", KINDS)
def test_training_ends_after_n_optimizer_steps_with_the_epoch_closed(kind, tmp_path):
    shown = io.StringIO()
    result, optim = fit(kind, tmp_path, lambda b: b.max_iterations(23).summary(), shown=shown)

    assert (result.iterations, result.epochs_completed, result.stopped_early) == (23, 3, False)
    assert steps_taken(optim) == {23}
    # Without `num_epochs`, as many epochs as the budget needs: 2 whole ones and 3 iterations.
    assert "Training for 3 epochs." in shown.getvalue()
    assert [len(lines(tmp_path, "train", "Loss", e)) for e in (1, 2, 3)] == [10, 10, 3]
    # The cut-short epoch is closed: its epoch values, its validation, its checkpoint.
    for split in ("train", "valid"):
        assert (tmp_path / split / "epoch-3" / "aggregates.json").is_file()
    assert not (tmp_path / "train" / "epoch-4").exists()
    from burnish.train.checkpoint import CheckpointId

    end, steps = end_record(tmp_path, CheckpointId(3))
    assert end == {"epoch": 3, "stopped_early": False, "max_iterations_reached": True}
    assert steps == 23
    assert result.summary is not None and result.summary.epochs == 3
    assert "Total Epochs: 3" in str(result.summary)


@pytest.mark.parametrize("kind", KINDS)
def test_a_schedule_of_n_steps_ends_exactly_at_the_budget(kind, tmp_path):
    """With accumulation of 3 and the scheduler stepped per optimizer step, 7 steps take 21
    iterations and use the 7 rates of a 7-step schedule, the last being its final rate."""
    schedule = LinearLrSchedulerConfig(1e-2, 1e-3, 6)  # 7 rates: 1e-2 ... 1e-3
    reference = schedule.init()
    rates = [reference.step() for _ in range(7)]
    assert rates[-1] == 1e-3

    result, optim = fit(
        kind,
        tmp_path,
        lambda b: b.grads_accumulation(3, lr_step="optimizer_step").max_iterations(7),
        lr=schedule.init(),
    )
    assert (result.iterations, result.epochs_completed) == (7, 3)
    assert steps_taken(optim) == {7}
    used = [
        float(line.split(",")[0])
        for epoch in (1, 2, 3)
        for line in lines(tmp_path, "train", "Learning_Rate", epoch)
    ]
    assert used == [rate for rate in rates for _ in range(3)]  # 21 iterations: 10, 10, 1
    assert used[-1] == 1e-3


def test_num_epochs_is_an_upper_bound(tmp_path):
    shown = io.StringIO()
    result, optim = fit(
        "LearnerBuilder", tmp_path, lambda b: b.num_epochs(2).max_iterations(100), shown=shown
    )
    assert (result.iterations, result.epochs_completed) == (20, 2)
    assert steps_taken(optim) == {20}
    assert "Training for 2 epochs." in shown.getvalue()
    from burnish.train.checkpoint import CheckpointId

    end, _ = end_record(tmp_path, CheckpointId(2))
    assert end == {"epoch": 2, "stopped_early": False, "max_iterations_reached": False}


@pytest.mark.parametrize("kind", KINDS)
def test_resume_of_a_run_that_spent_its_budget_trains_nothing(kind, tmp_path):
    first, _ = fit(kind, tmp_path, lambda b: b.max_iterations(23))
    trained = {name: t.clone() for name, t in first.model.state_dict().items()}
    logged = metric_logs(tmp_path)

    shown = io.StringIO()
    again, optim = fit(kind, tmp_path, lambda b: b.max_iterations(23).resume(), shown=shown)
    assert (again.iterations, again.epochs_completed, again.interrupted) == (23, 3, False)
    for name, tensor in trained.items():
        assert torch.equal(tensor, again.model.state_dict()[name]), name
    assert metric_logs(tmp_path) == logged
    message = "Training is already complete: 3 epochs, 23 optimizer steps, nothing left to train"
    assert message in shown.getvalue()
    assert "raise `max_iterations` to go on" in shown.getvalue()
    assert "Training for" not in shown.getvalue()

    # A larger budget goes on, from the next epoch.
    more, optim = fit(kind, tmp_path, lambda b: b.max_iterations(30).resume())
    assert (more.iterations, more.epochs_completed) == (30, 4)
    assert steps_taken(optim) == {30}
    assert len(lines(tmp_path, "train", "Loss", 4)) == 7


class StopAt(LossMetric):
    """Asks the learner to stop after a global training iteration (like Ctrl-C)."""

    def __init__(self, interrupter, iteration):
        super().__init__()
        self.name, self.interrupter, self.at, self.seen = "StopAt", interrupter, iteration, 0

    def update(self, item, metadata):
        self.seen += 1
        if self.seen == self.at:
            self.interrupter.stop("test")
        return super().update(item, metadata)


@pytest.mark.parametrize("stop_at", [5, 20, 21])  # mid-group, epoch end, first of epoch 3
def test_a_stopped_run_resumes_to_exactly_n(stop_at, tmp_path):
    """Accumulation of 2 across epoch ends, a budget of 11 steps (22 iterations): stopped at
    any iteration and resumed, the parameters and logs equal an uninterrupted run's."""

    def budget(b):
        return b.grads_accumulation(2).max_iterations(11).checkpoint_every(4)

    expected, _ = fit("LearnerBuilder", tmp_path / "straight", budget)
    assert (expected.iterations, expected.epochs_completed) == (11, 3)

    def stopping(b):
        return budget(b).metric_train_numeric(StopAt(b.interrupter(), stop_at))

    stopped, _ = fit("LearnerBuilder", tmp_path / "run", stopping)
    assert stopped.interrupted
    resumed, optim = fit("LearnerBuilder", tmp_path / "run", lambda b: budget(b).resume())
    assert (resumed.iterations, resumed.epochs_completed) == (11, 3)
    assert steps_taken(optim) == {11}
    for name, tensor in expected.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for path in sorted((tmp_path / "straight").rglob("Loss.log")):
        relative = path.relative_to(tmp_path / "straight")
        assert (tmp_path / "run" / relative).read_bytes() == path.read_bytes(), relative


def test_the_budget_counts_epochs_from_where_the_run_stands():
    from types import SimpleNamespace

    from burnish.train.loop.position import Phase, Position

    def state(epoch, iteration, steps, accumulated=0, phase=Phase.TRAIN):
        accumulation = SimpleNamespace(count=accumulated)
        return SimpleNamespace(
            position=Position(epoch, iteration, phase),
            optimizer_steps=steps,
            accumulation=accumulation,
        )

    budget = StepBudget(None, 23)
    assert budget.last_epoch(state(1, 0, 0), 10) == 3
    assert budget.last_epoch(state(3, 2, 22), 10) == 3
    assert budget.last_epoch(state(3, 3, 23), 10) == 3  # spent: the epoch closes
    assert budget.last_epoch(state(2, 10, 20, phase=Phase.VALID), 10) == 3
    assert budget.last_epoch(state(2, 4, 14), 5) == 4  # another world size: 5 batches an epoch
    assert StepBudget(2, 23).last_epoch(state(1, 0, 0), 10) == 2
    assert StepBudget(5, None).last_epoch(state(1, 0, 0), 10) == 5
    accumulating = StepBudget(None, 7, accumulation=3)  # 21 iterations
    assert accumulating.last_epoch(state(1, 0, 0), 10) == 3
    assert accumulating.last_epoch(state(2, 10, 3, accumulated=2, phase=Phase.VALID), 10) == 3
    assert accumulating.last_epoch(state(1, 0, 0), 21) == 1


def test_a_budget_over_an_empty_training_loader_says_what_to_do(tmp_path):
    builder = LearnerBuilder(tmp_path).renderer(CliMetricsRenderer(file=io.StringIO()))
    learner = builder.max_iterations(5).build(Mlp(), AdamConfig().init(), 1e-3)
    # The empty loader is named before the budget is looked at (test_empty_loaders.py).
    with pytest.raises(ValueError, match=r"The train data loader .* yields no batches: len"):
        learner.fit([], [])


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "10"])
def test_max_iterations_and_valid_every_reject_what_is_not_a_positive_integer(value):
    for method in ("max_iterations", "valid_every"):
        with pytest.raises(ValueError, match=rf"`{method}` must be an integer >= 1\. Received"):
            getattr(LearnerBuilder("unused"), method)(value)


def test_the_inspect_view_says_the_budget_ended_the_run(tmp_path):
    from burnish.cli.inspect import read_record

    fit("LearnerBuilder", tmp_path, lambda b: b.max_iterations(12))
    text = str(read_record(tmp_path / "checkpoint" / "epoch-2" / "learner.mpk"))
    assert "Run ended: after epoch 2 (its step budget; resume() goes on only with a larger " in text
    assert "Optimizer steps: 12" in text
    assert json.loads((tmp_path / "train" / "epoch-2" / "aggregates.json").read_text())
