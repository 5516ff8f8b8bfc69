"""The CPU proxy of kernel launches: the device operations a training iteration dispatches.

On a GPU every operation that is not a view launches a kernel, and a launch-bound model pays
for each one. A `TorchDispatchMode` counts the aten operations that reach the backend; the
difference between a run of 2n iterations and one of n is the per-iteration count. The
Learner, with a loss metric, may dispatch no more of them than a hand-written burnish loop that
sums its loss on the device, and its metrics' read-back adds one `stack` per drain, not one
copy per value.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import burnish as bn
from burnish.optim import AdamConfig, GradientsParams
from burnish.train import LearnerBuilder, RegressionOutput, TrainOutput
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import NullRenderer

from tests.train.helpers import Mlp, loaders

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BATCHES = 32  # one drain of the metrics processor (at most 32 pending iterations)


class DeviceOps(TorchDispatchMode):
    """Counts the aten operations dispatched, views (no kernel of their own) left out."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:
            self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


class Regression(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        bn.seed(5)
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)

    def train_step(self, batch) -> TrainOutput:
        inputs, targets = batch
        output = self(inputs)
        item = RegressionOutput(torch.nn.functional.mse_loss(output, targets), output, targets)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> RegressionOutput:
        inputs, targets = batch
        output = self(inputs)
        return RegressionOutput(torch.nn.functional.mse_loss(output, targets), output, targets)


def _batches(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        (torch.randn(4, 8, generator=generator), torch.randn(4, 2, generator=generator))
    ] * count


def _custom_loop(iterations: int) -> collections.Counter[str]:
    model, optim = Regression(), AdamConfig().init()
    batches = _batches(iterations)
    with DeviceOps() as ops:
        loss_sum = torch.zeros(())
        for inputs, targets in batches:
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            grads = GradientsParams.from_grads(bn.backward(loss), model)
            model = optim.step(1e-3, model, grads)
            loss_sum += loss.detach()
        loss_sum.item()
    return ops.counts


def _learner(tmp_path, iterations: int) -> collections.Counter[str]:
    learner = (
        LearnerBuilder(tmp_path / f"run-{iterations}")
        .metric_train_numeric(LossMetric())
        .renderer(NullRenderer())
        .num_epochs(1)
        .build(Regression(), AdamConfig().init(), 1e-3)
    )
    batches = _batches(iterations)
    with DeviceOps() as ops:
        learner.fit(batches, batches[:1])
    return ops.counts


def _per_iteration(run, iterations: int) -> collections.Counter[str]:
    """The operations of `iterations` more iterations (set-up and epoch end cancel out)."""
    counts = run(2 * iterations)
    counts.subtract(run(iterations))
    return +counts


def test_the_learner_dispatches_no_more_device_ops_per_iteration_than_a_custom_loop(tmp_path):
    custom = _per_iteration(_custom_loop, BATCHES)
    learner = _per_iteration(lambda n: _learner(tmp_path, n), BATCHES)
    assert sum(custom.values()) > 20 * BATCHES  # forward, backward, Adam: the counter sees them
    # The loss metric accumulates with one fused add (the custom loop: one `add_`), and the
    # read-back is one `stack` for the 32 pending entries, not a copy per entry.
    assert learner["aten.stack.default"] == 1
    assert sum(learner.values()) <= sum(custom.values()) + 1, (learner - custom, custom - learner)


def _classification_ops(tmp_path, metrics) -> collections.Counter[str]:
    bn.seed(1)
    builder = LearnerBuilder(tmp_path).renderer(NullRenderer()).num_epochs(2)
    for metric in metrics:
        builder = builder.metric_train_numeric(metric)
    learner = builder.build(Mlp(), AdamConfig().init(), 1e-3)
    train, valid = loaders(batch_size=16, train_items=256, valid_items=64)
    with DeviceOps() as ops:
        learner.fit(train, valid)
    return ops.counts


def test_the_device_ops_of_loss_and_accuracy_metrics_are_few_and_counted(tmp_path):
    """2 epochs of 16 iterations, with and without a loss and an accuracy metric: per
    iteration the loss adds one fused accumulation, the accuracy its own five operations and
    one; the first update of an epoch converts (2 metrics x 2 epochs); at each epoch's end
    every metric's `value()` divides its totals, and one `stack` reads that and every pending
    value back: the same `stack` that reads back the losses the non-finite watch looks at,
    which the bare run has too."""
    bare = _classification_ops(tmp_path / "bare", [])
    counts = _classification_ops(tmp_path / "metrics", [LossMetric(), AccuracyMetric()])
    assert bare["aten.stack.default"] == counts["aten.stack.default"] == 2
    counts.subtract(bare)
    iterations, first_updates = 32, 4
    assert +counts == {
        "aten.add.Tensor": 2 * iterations,  # one accumulation per metric
        "aten.argmax.default": iterations,  # accuracy: argmax == targets, as a float mean %
        "aten.eq.Tensor": iterations,
        "aten._to_copy.default": iterations + first_updates,
        "aten.mean.default": iterations,
        "aten.mul.Tensor": iterations + first_updates,
        "aten.div.Tensor": 2 * 2,  # the epoch values: sum / count per metric and epoch
    }


class Blocks(torch.nn.Module):
    """`blocks` Linear+LayerNorm blocks: 4 parameter tensors each, for per-tensor costs."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        bn.seed(5)
        layers = [m for _ in range(blocks) for m in (torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))]
        self.layers = torch.nn.Sequential(*layers, torch.nn.Linear(8, 2))

    train_step = Regression.train_step
    valid_step = Regression.valid_step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _learner_with(tmp_path, configure, blocks: int, iterations: int) -> collections.Counter[str]:
    builder = (
        LearnerBuilder(tmp_path / f"run-{blocks}-{iterations}")
        .metric_train_numeric(LossMetric())
        .renderer(NullRenderer())
        .num_epochs(1)
    )
    learner = configure(builder).build(Blocks(blocks), AdamConfig().init(), 1e-3)
    batches = _batches(iterations)
    with DeviceOps() as ops:
        learner.fit(batches, batches[:1])
    return ops.counts


def _added_per_iteration(tmp_path, configure, blocks: int) -> collections.Counter[str]:
    """The operations per iteration `configure` adds to a plain run of the same model."""

    def run(setting):
        return _per_iteration(lambda n: _learner_with(tmp_path, setting, blocks, n), BATCHES)

    added = run(configure)
    added.subtract(run(lambda b: b))
    return +added


def test_the_ema_adds_one_multi_tensor_kernel_per_step_whatever_the_tensor_count(tmp_path):
    for blocks in (2, 8):  # 13 and 37 parameter tensors
        added = _added_per_iteration(tmp_path, lambda b: b.with_ema(0.99), blocks)
        assert added == {"aten._foreach_lerp_.Scalar": BATCHES}, (blocks, added)


def test_guarded_steps_add_kernels_that_do_not_grow_with_the_tensor_count(tmp_path):
    """`"skip"`: one found-inf check over every gradient and its flag, Adam's fused kernel (with
    its step counters on the device) for the foreach ones, the flag's count in the metric."""
    counts = [
        _added_per_iteration(tmp_path, lambda b: b.on_non_finite("skip"), blocks)
        for blocks in (2, 8)
    ]
    assert counts[0] == counts[1], counts
    added = counts[0]
    assert added["aten._amp_foreach_non_finite_check_and_unscale_.default"] == BATCHES
    assert added["aten._fused_adam_.default"] == BATCHES
    assert sum(added.values()) <= 8 * BATCHES, added
