"""A short training script for the dashboard tests in a real terminal (tmux).

    python tests/train/renderer/dashboard_run.py ARTIFACT_DIR [--epochs N] [--throughput]
    torchrun --nproc-per-node=2 tests/train/renderer/dashboard_run.py ARTIFACT_DIR

640 items in batches of 32: under two ranks an epoch is 10 iterations per rank, shorter than
the metric gather (every 16 iterations), so the dashboard hears of an epoch only at its end.
Prints `dashboard_run: <epochs completed> <interrupted>` when `fit` returns. `--throughput`
adds a `ThroughputMetric` with MFU to the training metrics.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

import torch
import torch.nn.functional as F

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.optim import SgdConfig
from burnish.train import LearnerBuilder, RegressionOutput, TrainOutput
from burnish.train.metric import LossMetric, ThroughputMetric


@dataclass
class Batch:
    inputs: torch.Tensor
    targets: torch.Tensor


class PairBatcher(Batcher):
    def batch(self, items, device) -> Batch:
        inputs = torch.stack([x for x, _ in items]).to(device)
        return Batch(inputs, torch.stack([y for _, y in items]).to(device))


class Regression(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)

    def forward_regression(self, batch: Batch) -> RegressionOutput:
        output = self.linear(batch.inputs)
        return RegressionOutput(F.mse_loss(output, batch.targets), output, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        item = self.forward_regression(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch: Batch) -> RegressionOutput:
        return self.forward_regression(batch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir", type=Path)
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--throughput", action="store_true")
    args = parser.parse_args()
    bn.seed(0)
    inputs = torch.randn(640, 4)
    items = list(zip(inputs, inputs.sum(1, keepdim=True)))
    loader = DataLoaderBuilder(PairBatcher()).batch_size(32)
    builder = (
        LearnerBuilder(args.artifact_dir)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .num_epochs(args.epochs)
    )
    if args.throughput:
        builder = builder.metric_train_numeric(ThroughputMetric(flops_per_item=1e6, peak_flops=1e9))
    learner = builder.build(Regression(), SgdConfig().init(), 1e-2)
    result = learner.fit(loader.shuffle(0).build(InMemDataset(items)),
                         loader.build(InMemDataset(items[:64])))  # fmt: skip
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"dashboard_run: {result.epochs_completed} {result.interrupted}", flush=True)


if __name__ == "__main__":
    main()
