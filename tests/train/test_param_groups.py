"""The learner with parameter groups: a `ModuleOptimizer` and a `ModuleLrScheduler`.

The scheduler's `ModuleLearningRate` reaches the optimizer whole (a rate per group) and the
`LearningRate` metric shows its base rate (Burn's `LearningRateMetric` shows `lr.base()`).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.lr_scheduler import LinearLrSchedulerConfig, ModuleLearningRate, ModuleLrScheduler
from burnish.optim import AdamWConfig, GradientsParams, ModuleOptimizer, ParamGroup
from burnish.record import DefaultRecorder
from burnish.train import (
    Learner,
    LearnerBuilder,
    RegressionOutput,
    SupervisedTraining,
    TrainOutput,
)
from burnish.train.metric import LearningRateMetric
from burnish.train.renderer import NullRenderer

from tests.helpers import LrSeen, iteration_lines
from tests.train.test_learner import StopAt

ITERATIONS = 10
BASE = LinearLrSchedulerConfig(1e-2, 1e-3, ITERATIONS)
HEAD = LinearLrSchedulerConfig(5e-2, 1e-2, ITERATIONS)


class Regression(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        bn.seed(6)
        self.body = nn.Linear(3, 8)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.norm(self.body(x))))

    def regression(self, batch) -> RegressionOutput:
        output = self(batch[0])
        return RegressionOutput(((output - batch[1]) ** 2).mean(), output, batch[1])

    def train_step(self, batch) -> TrainOutput:
        item = self.regression(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> RegressionOutput:
        return self.regression(batch)


def batches(count: int = ITERATIONS):
    gen = torch.Generator().manual_seed(1)
    return [
        (torch.randn(4, 3, generator=gen), torch.randn(4, 2, generator=gen)) for _ in range(count)
    ]


def grouped():
    optim = ModuleOptimizer(AdamWConfig(weight_decay=0.1)).with_group(
        ParamGroup.from_regex(r"(bias|^norm\.weight)$"), AdamWConfig(weight_decay=0.0)
    )
    scheduler = ModuleLrScheduler(BASE).with_group(ParamGroup.from_predicate("head."), HEAD)
    return optim, scheduler


def settings(builder, seen=None):
    return (
        builder.metric_train_numeric(seen or LrSeen())
        .metric_train_numeric(LearningRateMetric())
        .renderer(NullRenderer())
        .num_epochs(1)
    )


def test_learner_with_groups_equals_the_custom_loop_and_logs_the_base_rate(tmp_path):
    seen = LrSeen()
    optim, scheduler = grouped()
    learner = settings(LearnerBuilder(tmp_path), seen).build(Regression(), optim, scheduler)
    result = learner.fit(batches(), batches(1))

    model, (optim, scheduler) = Regression(), grouped()
    for batch in batches():
        lr = scheduler.step()
        grads = GradientsParams.from_grads(bn.backward(model.regression(batch).loss), model)
        model = optim.step(lr, model, grads)
    for name, tensor in model.state_dict().items():
        assert torch.equal(result.model.state_dict()[name], tensor), name

    assert all(isinstance(lr, ModuleLearningRate) for lr in seen.lrs)
    base = BASE.init()
    expected = [base.step() for _ in range(ITERATIONS)]
    assert [float(lr) for lr in seen.lrs] == expected
    assert [lr.lr_from_param("head.weight") for lr in seen.lrs] != expected  # the head's own
    lines = iteration_lines(tmp_path / "train/epoch-1/Learning_Rate.log")
    logged = [float(line.split(",")[0]) for line in lines]
    assert logged == pytest.approx(expected, rel=1e-6)


def test_supervised_training_launches_a_learner_with_groups_as_the_builder(tmp_path):
    optim, scheduler = grouped()
    built = settings(LearnerBuilder(tmp_path / "builder")).build(Regression(), optim, scheduler)
    expected = built.fit(batches(), batches(1)).model
    optim, scheduler = grouped()
    training = settings(SupervisedTraining(tmp_path / "launch", batches(), batches(1)))
    launched = training.launch(Learner(Regression(), optim, scheduler)).model
    for name, tensor in expected.state_dict().items():
        assert torch.equal(launched.state_dict()[name], tensor), name


def test_interrupted_inside_an_accumulation_group_then_resumed_is_exact(tmp_path):
    """The rate per group of a group of accumulated iterations comes back from the
    checkpoint, with each group's optimizer state and schedule."""

    def run(directory, stop_at=None):
        optim, scheduler = grouped()
        builder = (
            settings(LearnerBuilder(directory))
            .num_epochs(2)
            .grads_accumulation(3, lr_step="optimizer_step")
            .with_file_checkpointer(DefaultRecorder())
            .resume()
        )
        if stop_at is not None:
            builder = builder.metric_train_numeric(StopAt(builder.interrupter(), stop_at))
        return builder.build(Regression(), optim, scheduler).fit(batches(), batches(1)), optim

    (straight, straight_optim) = run(tmp_path / "straight")
    stopped, _ = run(tmp_path / "resumed", stop_at=5)  # 1 step done, 2 gradients pending
    assert stopped.interrupted
    resumed, resumed_optim = run(tmp_path / "resumed")
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    expected, actual = straight_optim.to_record(), resumed_optim.to_record()
    assert expected["group_of"] == actual["group_of"]
    for name, entry in expected["state"].items():
        for key, value in entry.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(actual["state"][name][key]))
    for relative in ("train/epoch-1/Learning_Rate.log", "train/epoch-2/Learning_Rate.log"):
        straight_log = (tmp_path / "straight" / relative).read_bytes()
        assert (tmp_path / "resumed" / relative).read_bytes() == straight_log


def test_a_module_optimizer_that_stepped_another_model_is_refused_at_fit(tmp_path):
    optim, scheduler = grouped()
    other = Regression()
    optim.step(
        1e-3, other, GradientsParams.from_grads(bn.backward(other(torch.ones(1, 3)).sum()), other)
    )
    learner = settings(LearnerBuilder(tmp_path)).build(Regression(), optim, scheduler)
    with pytest.raises(ValueError, match=r"it already stepped another Regression"):
        learner.fit(batches(), batches(1))


def test_a_compiled_whole_step_refuses_a_module_optimizer(tmp_path):
    """`compile(step=True)` takes one tensor rate into torch's Sgd/Adam kernels: refused."""
    optim, scheduler = grouped()
    builder = settings(LearnerBuilder(tmp_path).compile(step=True))
    with pytest.raises(ValueError, match=r"`compile\(step=True\)`.*Received: ModuleOptimizer"):
        builder.build(Regression(), optim, scheduler).fit(batches(), batches(1))
