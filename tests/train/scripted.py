"""A run whose validation "loss" the test chooses, epoch by epoch: early stopping and
best-by-metric checkpointing then take decisions known in advance.

The model is a tiny regression that really trains (its parameters change every step, with
dropout drawing random numbers), on 16 in-memory items; only the `Scripted` metric's epoch
values are set by the test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.train import (
    Aggregate,
    ComposedCheckpointingStrategy,
    Direction,
    KeepLastNCheckpoints,
    LearnerBuilder,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    RegressionOutput,
    Split,
    StoppingCondition,
    TrainOutput,
)
from burnish.train.metric import LossMetric
from burnish.train.metric.base import adapt
from burnish.train.metric.loss import LossInput

# The example: the best epoch is 3; `no_improvement_since(2)` stops after epoch 5.
LOSSES = (5.0, 4.0, 3.0, 9.0, 9.0, 9.0, 9.0, 9.0)


class ScriptedLoss(LossMetric):
    """A valid metric whose value in epoch N is `values[N - 1]`, whatever the model does."""

    def __init__(self, values: Sequence[float] = LOSSES) -> None:
        super().__init__()
        self.name = "Scripted"
        self.values = tuple(values)

    def update(self, item, metadata):
        data = adapt(item, LossInput)
        value = torch.full((), self.values[metadata.epoch - 1], device=data.loss.device)
        return super().update(LossInput(value, data.batch_size), metadata)


@dataclass
class Batch:
    inputs: torch.Tensor
    targets: torch.Tensor


class PairBatcher(Batcher):
    def batch(self, items, device):
        inputs = torch.stack([x for x, _ in items]).to(device)
        targets = torch.stack([y for _, y in items]).to(device)
        return Batch(inputs, targets)


class Regression(bn.Module):
    """Linear -> ReLU -> dropout -> linear: trains in microseconds, draws random numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.linear1 = nn.Linear(4, 8)
        self.dropout = nn.Dropout(0.2)
        self.linear2 = nn.Linear(8, 1)

    def forward_regression(self, batch: Batch) -> RegressionOutput:
        output = self.linear2(self.dropout(torch.relu(self.linear1(batch.inputs))))
        loss = nn.functional.mse_loss(output, batch.targets)
        return RegressionOutput(loss, output, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        item = self.forward_regression(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch: Batch) -> RegressionOutput:
        return self.forward_regression(batch)


def loaders(train_items: int = 16, valid_items: int = 8, batch_size: int = 4):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(train_items + valid_items, 4, generator=generator)
    targets = inputs.sum(1, keepdim=True) + 0.1 * torch.randn(len(inputs), 1, generator=generator)
    items = list(zip(inputs, targets))

    def loader():
        return DataLoaderBuilder(PairBatcher()).batch_size(batch_size)

    train = loader().shuffle(5).build(InMemDataset(items[:train_items]))
    return train, loader().build(InMemDataset(items[train_items:]))


def early_stopping(n_epochs: int = 2) -> MetricEarlyStoppingStrategy:
    return MetricEarlyStoppingStrategy(
        "Scripted",
        Aggregate.MEAN,
        Direction.LOWEST,
        Split.VALID,
        StoppingCondition.no_improvement_since(n_epochs),
    )


def best_by_metric() -> MetricCheckpointingStrategy:
    return MetricCheckpointingStrategy("Scripted", Aggregate.MEAN, Direction.LOWEST, Split.VALID)


def strategy(name: str):
    """`composed`: keep the last 2 and the best (Burn's default, on `Scripted`); `metric`:
    the best only; `keep`: the last 2."""
    if name == "composed":
        return (
            ComposedCheckpointingStrategy.builder()
            .add(KeepLastNCheckpoints(2))
            .add(best_by_metric())
            .build()
        )
    if name == "metric":
        return best_by_metric()
    return KeepLastNCheckpoints(2)


def builder(
    artifact_dir,
    epochs: int = 8,
    strategy_name: str = "composed",
    values: Sequence[float] = LOSSES,
    stop: bool = True,
) -> LearnerBuilder:
    """Scripted valid metric, `Loss` on both splits, full-precision checkpoints, quiet."""
    from burnish.record import DefaultRecorder
    from burnish.train.renderer import NullRenderer

    result = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_valid_numeric(ScriptedLoss(values))
        .with_file_checkpointer(DefaultRecorder())
        .with_checkpointing_strategy(strategy(strategy_name))
        .renderer(NullRenderer())
        .num_epochs(epochs)
    )
    return result.early_stopping(early_stopping()) if stop else result


def build(configured: LearnerBuilder, seed: int = 4):
    from burnish.optim import AdamConfig

    bn.seed(seed)
    return configured.build(Regression(), AdamConfig().init(), 1e-2)


def checkpoints(artifact_dir) -> list[str]:
    """The checkpoint directories left in `artifact_dir`, sorted by name."""
    return sorted(p.name for p in (artifact_dir / "checkpoint").iterdir())


def logs(artifact_dir) -> dict[str, bytes]:
    """Every metric log file's bytes, by path relative to `artifact_dir`."""
    return {
        str(path.relative_to(artifact_dir)): path.read_bytes()
        for split in ("train", "valid")
        for path in sorted((artifact_dir / split).rglob("*.log"))
    }


def parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
