"""A real (tiny) training run with the Learner: config.json, logs, checkpoints, model.mpk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.nn.loss import CrossEntropyLossConfig
from burnish.optim import AdamConfig
from burnish.record import CompactRecorder
from burnish.train import ClassificationOutput, EvaluatorBuilder, LearnerBuilder, TrainOutput
from burnish.train.interrupter import Interrupter
from burnish.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnish.train.metric.base import Metric, MetricMetadata
from burnish.train.renderer import CliMetricsRenderer

EPOCHS = 3


@bn.config
class RunConfig:
    hidden_size: int = 16
    learning_rate: float = 0.01
    num_epochs: int = EPOCHS


@dataclass
class Batch:
    features: torch.Tensor
    targets: torch.Tensor


class PairBatcher(Batcher):
    def batch(self, items, device):
        features = torch.stack([features for features, _ in items]).to(device)
        return Batch(features, torch.tensor([target for _, target in items], device=device))


class Classifier(bn.Module):
    """Two linears around a ReLU: three top-level submodules, one without parameters."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.encoder = nn.Linear(8, hidden_size)
        self.activation = nn.ReLU()
        self.head = nn.Linear(hidden_size, 3)

    def forward_classification(self, batch: Batch) -> ClassificationOutput:
        output = self.head(self.activation(self.encoder(batch.features)))
        loss = CrossEntropyLossConfig().init(output.device).forward(output, batch.targets)
        return ClassificationOutput(loss, output, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        item = self.forward_classification(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.forward_classification(batch)


class StopAfter(Metric):
    """Asks the interrupter to stop after iteration `iteration` (logs nothing)."""

    name = "Stop"

    def __init__(self, interrupter: Interrupter, iteration: int) -> None:
        self.interrupter = interrupter
        self.iteration = iteration

    def update(self, item: object, metadata: MetricMetadata) -> None:
        if metadata.iteration >= self.iteration:
            self.interrupter.stop(f"stop after iteration {self.iteration}")


def _items(count: int, seed: int) -> InMemDataset:
    """Three Gaussian blobs in 8 dimensions: learnable in a few epochs."""
    generator = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, 3, (count,), generator=generator)
    centers = torch.eye(3, 8) * 3
    features = centers[targets] + torch.randn(count, 8, generator=generator)
    return InMemDataset(list(zip(features, targets.tolist())))


def train_run(
    artifact_dir: Path,
    epochs: int = EPOCHS,
    num_workers: int = 0,
    learning_rate: float = 0.01,
    learning_rate_metric: bool = False,
    stop_after: int | None = None,
    evaluation: str | None = None,
    hidden_size: int = 16,
) -> Path:
    """Train `Classifier` for `epochs` epochs into `artifact_dir`, as the guide does (~1 s).

    `learning_rate_metric` adds `LearningRateMetric` (as docs/learner.md's example does): with a
    constant `learning_rate` of 0.1 its epoch mean is 0.1 plus one ulp. `stop_after` stops
    training after that iteration of the first epoch (as `q` or Ctrl-C would), which writes a
    mid-epoch checkpoint. `evaluation` names an evaluation of the trained model on a test set
    (an `Evaluator`'s, written to `test/<name>/`).
    """
    config = RunConfig(hidden_size=hidden_size, num_epochs=epochs, learning_rate=learning_rate)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    config.save(artifact_dir / "config.json")
    bn.seed(0)
    loader = DataLoaderBuilder(PairBatcher()).batch_size(32).num_workers(num_workers)
    builder = LearnerBuilder(artifact_dir)
    if stop_after is not None:
        builder = builder.metric_train(StopAfter(builder.interrupter(), stop_after))
    if learning_rate_metric:
        builder = builder.metric_train_numeric(LearningRateMetric())
    learner = (
        builder.metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .renderer(CliMetricsRenderer())
        .num_epochs(config.num_epochs)
        .build(Classifier(config.hidden_size), AdamConfig().init(), config.learning_rate)
    )
    result = learner.fit(loader.shuffle(1).build(_items(256, 1)), loader.build(_items(96, 2)))
    result.model.save_file(artifact_dir / "model", CompactRecorder())
    if evaluation is not None:
        evaluator = (
            EvaluatorBuilder(artifact_dir)
            .metrics(AccuracyMetric(), LossMetric())
            .renderer(CliMetricsRenderer())
            .build(result.model)
        )
        evaluator.eval(evaluation, loader.build(_items(64, 3)))
    return artifact_dir
