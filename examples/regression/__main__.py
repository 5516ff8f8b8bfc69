"""Regression with the Learner: a small MLP on scikit-learn's diabetes data (442 patients,
10 features, shipped inside scikit-learn: no download), with a user-defined metric.

    python -m examples.regression [--epochs 60] [--artifact-dir artifacts/regression]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.nn.loss import MseLoss
from burnish.optim import AdamConfig
from burnish.train import LearnerBuilder, RegressionOutput, TrainOutput
from burnish.train.metric import LossMetric

from examples.interrupted import exit_if_interrupted
from examples.regression.metric import MeanAbsoluteError


@dataclasses.dataclass
class DiabetesBatch:
    features: torch.Tensor  # [B, 10]
    targets: torch.Tensor  # [B, 1], standardised


class DiabetesBatcher(Batcher):
    def batch(self, items, device) -> DiabetesBatch:
        features = torch.from_numpy(np.stack([f for f, _ in items])).to(device)
        targets = torch.tensor([[t] for _, t in items], dtype=torch.float32, device=device)
        return DiabetesBatch(features, targets)


class Regressor(bn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward_regression(self, batch: DiabetesBatch) -> RegressionOutput:
        output = self.mlp(batch.features)
        return RegressionOutput(MseLoss().forward(output, batch.targets), output, batch.targets)

    def train_step(self, batch: DiabetesBatch) -> TrainOutput:
        item = self.forward_regression(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch: DiabetesBatch) -> RegressionOutput:
        return self.forward_regression(batch)


def datasets(seed: int = 0):
    """80/20 split; features standardised, targets standardised with the train statistics."""
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order].astype(np.float32), y[order].astype(np.float32)
    split = int(0.8 * len(x))
    x = (x - x[:split].mean(0)) / x[:split].std(0)
    mean, std = float(y[:split].mean()), float(y[:split].std())
    items = [(features, (target - mean) / std) for features, target in zip(x, y)]
    return InMemDataset(items[:split]), InMemDataset(items[split:]), std


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--artifact-dir", default="artifacts/regression")
    args = parser.parse_args(argv)

    bn.seed(7)
    train, valid, target_std = datasets()
    loader = DataLoaderBuilder(DiabetesBatcher()).batch_size(32)
    learner = (
        LearnerBuilder(args.artifact_dir)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train_numeric(MeanAbsoluteError(scale=target_std))
        .metric_valid_numeric(MeanAbsoluteError(scale=target_std))
        .num_epochs(args.epochs)
        .summary()
        .build(Regressor(), AdamConfig().init(), 1e-3)
    )
    result = learner.fit(loader.shuffle(7).build(train), loader.build(valid))
    exit_if_interrupted(result, "the model is half-trained", resume=None)
    print(f"Trained {result.epochs_completed} epochs; logs in {args.artifact_dir}")
    return result


if __name__ == "__main__":
    main()
