"""When the learning-rate scheduler advances under gradient accumulation.

Burn's learner steps the scheduler once per iteration (batch), also while accumulating: the
default. `grads_accumulation(n, lr_step="optimizer_step")` steps it once per optimizer step,
for a schedule built in optimizer steps.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.lr_scheduler import LinearLrSchedulerConfig
from burnish.optim import GradientsAccumulator, GradientsParams, SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import LearnerBuilder, RegressionOutput, TrainOutput
from burnish.train.renderer import NullRenderer

from tests.helpers import LrSeen
from tests.train.test_learner import StopAt

ITERATIONS, ACCUMULATION = 12, 3
SCHEDULE = LinearLrSchedulerConfig(0.1, 0.01, ITERATIONS // ACCUMULATION)


class Regression(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        bn.seed(4)
        self.linear = nn.Linear(3, 2, dtype=torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def loss(self, batch) -> torch.Tensor:
        return self.regression(batch).loss

    def regression(self, batch) -> RegressionOutput:
        output = self(batch[0])
        return RegressionOutput(((output - batch[1]) ** 2).mean(), output, batch[1])

    def train_step(self, batch) -> TrainOutput:
        item = self.regression(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> RegressionOutput:
        return self.regression(batch)


def batches(count: int = ITERATIONS):
    gen = torch.Generator().manual_seed(0)
    return [
        (
            torch.randn(4, 3, generator=gen, dtype=torch.float32),
            torch.randn(4, 2, generator=gen, dtype=torch.float32),
        )
        for _ in range(count)
    ]


def schedule_values(count: int) -> list[float]:
    scheduler = SCHEDULE.init()
    return [scheduler.step() for _ in range(count)]


def fit(directory, configure, epochs: int = 1, seen: LrSeen | None = None):
    builder = (
        LearnerBuilder(directory)
        .metric_train_numeric(seen or LrSeen())
        .renderer(NullRenderer())
        .num_epochs(epochs)
    )
    learner = configure(builder).build(Regression(), SgdConfig().init(), SCHEDULE)
    return learner.fit(batches(), batches(1))


def test_the_scheduler_steps_once_per_batch_by_default_as_burn(tmp_path):
    seen = LrSeen()
    fit(tmp_path, lambda b: b.grads_accumulation(ACCUMULATION), seen=seen)
    # Burn's learner: one scheduler step per iteration, accumulating or not; a schedule of
    # 4 iterations is spent after the first 4 batches (then it stays at its final rate).
    assert seen.lrs == pytest.approx(schedule_values(ITERATIONS))
    assert seen.lrs[4:] == pytest.approx([0.01] * (ITERATIONS - 4))


def test_lr_step_per_optimizer_step_spans_the_schedule_over_the_steps(tmp_path):
    seen = LrSeen()
    fit(tmp_path, lambda b: b.grads_accumulation(ACCUMULATION, lr_step="optimizer_step"), seen=seen)
    steps = schedule_values(ITERATIONS // ACCUMULATION)
    assert steps[0] == 0.1 and len(set(steps)) == len(steps)  # four distinct rates
    assert seen.lrs == pytest.approx([lr for lr in steps for _ in range(ACCUMULATION)])


def test_lr_step_per_optimizer_step_equals_the_custom_loop(tmp_path):
    """Each optimizer step applies the summed gradients with the schedule's next rate."""
    result = fit(tmp_path, lambda b: b.grads_accumulation(ACCUMULATION, lr_step="optimizer_step"))
    model, optim, scheduler = Regression(), SgdConfig().init(), SCHEDULE.init()
    accumulator = GradientsAccumulator()
    data = batches()
    for start in range(0, ITERATIONS, ACCUMULATION):
        lr = scheduler.step()
        for batch in data[start : start + ACCUMULATION]:
            accumulator.accumulate(
                model, GradientsParams.from_grads(bn.backward(model.loss(batch)), model)
            )
        model = optim.step(lr, model, accumulator.grads())
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(result.model.state_dict()[name], tensor, atol=1e-6, rtol=0)


def test_interrupted_mid_group_then_resumed_is_exact_per_optimizer_step(tmp_path):
    def run(directory, stop_at=None):
        def configure(builder):
            builder = (
                builder.grads_accumulation(ACCUMULATION, lr_step="optimizer_step")
                .with_file_checkpointer(DefaultRecorder())
                .resume()
            )
            if stop_at is not None:
                builder = builder.metric_train_numeric(StopAt(builder.interrupter(), stop_at))
            return builder

        return fit(directory, configure, epochs=2)

    straight = run(tmp_path / "straight")
    stopped = run(tmp_path / "resumed", stop_at=5)  # one step done, 2 gradients pending
    assert stopped.interrupted
    resumed = run(tmp_path / "resumed")
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for relative in ("train/epoch-1/LrSeen.log", "train/epoch-2/LrSeen.log"):
        assert (tmp_path / "resumed" / relative).read_bytes() == (
            tmp_path / "straight" / relative
        ).read_bytes()


def test_unknown_lr_step_is_refused(tmp_path):
    with pytest.raises(
        ValueError, match=r"`lr_step` must be 'iteration' .* Received: lr_step='step'"
    ):
        LearnerBuilder(tmp_path).grads_accumulation(2, lr_step="step")
