"""Time to 99% MNIST test accuracy: a small CNN trained through the Learner, or by hand.

    python -m examples.time_to_accuracy            # through the burnish Learner
    python -m examples.time_to_accuracy --plain    # the same recipe as a plain PyTorch loop

The recipe: a small CNN (two 3x3 convolutions with batch norm and max pooling, one linear
layer), Adam, batch 128, a linear warm-up then cosine decay (burnish.lr_scheduler's
`SequentialLrSchedulerConfig([LinearLrSchedulerConfig, CosineAnnealingLrSchedulerConfig])`,
spanning `--epochs` epochs). After each epoch the whole test set is evaluated; training stops
as soon as the accuracy reaches `--target` (99.0%). Both versions see the same batches (the
loader's seeded shuffle) from the same initial weights, so they stop after the same epoch.
The time reported is from the first training step to the end of the epoch that reached the
target (validation and a checkpoint included), not imports or dataset loading.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import burnish as bn
from burnish.data.dataset.vision import MnistDataset
from burnish.lr_scheduler import (
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    SequentialLrSchedulerConfig,
)
from burnish.train import ClassificationOutput, TrainOutput
from burnish.train.components.early_stopping import EarlyStoppingStrategy
from burnish.train.metric.store import Aggregate, Split

from examples.interrupted import exit_if_interrupted

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))  # offline: the repo's MNIST


@bn.config
class RecipeConfig:
    """The recipe, shared by both versions."""

    epochs: int = 2
    batch_size: int = 128
    valid_batch_size: int = 1000
    peak_lr: float = 4e-3
    warmup_lr: float = 1e-4
    warmup_iters: int = 100
    epsilon: float = 1e-8
    target: float = 99.0
    seed: int = 42

    def iterations(self, num_items: int) -> int:
        return self.epochs * math.ceil(num_items / self.batch_size)

    def lr_at(self, step: int, total: int) -> float:
        """The schedule by hand (what the plain loop uses): equal to `scheduler()`."""
        if step < self.warmup_iters:
            return self.warmup_lr + (self.peak_lr - self.warmup_lr) * step / self.warmup_iters
        cosine = math.cos(math.pi * (step - self.warmup_iters) / (total - self.warmup_iters))
        return 0.5 * self.peak_lr * (1.0 + cosine)

    def scheduler(self, total: int):
        """Linear warm-up, then cosine to 0 at the last iteration (burnish.lr_scheduler)."""
        warmup = LinearLrSchedulerConfig(self.warmup_lr, self.peak_lr, self.warmup_iters)
        decay = CosineAnnealingLrSchedulerConfig(self.peak_lr, total - self.warmup_iters)
        return SequentialLrSchedulerConfig([warmup, decay], [self.warmup_iters]).init()


class SmallCnn(bn.Module):
    """conv 1->16, BN, ReLU, pool; conv 16->32, BN, ReLU, pool; linear 1568->128, ReLU, ->10."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Images `[B, 28, 28]` -> logits `[B, 10]`."""
        return self.head(self.features(images.unsqueeze(1)).flatten(1))

    def train_step(self, batch) -> TrainOutput:
        item = self.valid_step(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> ClassificationOutput:
        output = self.forward(batch.images)
        return ClassificationOutput(F.cross_entropy(output, batch.targets), output, batch.targets)


class TargetReached(EarlyStoppingStrategy):
    """Stop once the validation accuracy of an epoch is at least `target` (%)."""

    def __init__(self, target: float) -> None:
        self.target = target

    def should_stop(self, epoch: int, store) -> bool:
        value = store.find_metric("Accuracy", epoch, Aggregate.MEAN, Split.VALID)
        return value is not None and value >= self.target


@dataclass
class Outcome:
    """How a run went: seconds to the target (or to the end), epochs, last test accuracy."""

    seconds: float
    epochs: int
    accuracy: float

    @property
    def reached(self) -> bool:
        return self.accuracy >= RecipeConfig().target


def train_learner(config: RecipeConfig, workdir: Path) -> Outcome:
    """The recipe through `LearnerBuilder` (metrics, file logs, checkpoints, CLI renderer)."""
    from burnish.data.dataloader import DataLoaderBuilder
    from burnish.optim import AdamConfig
    from burnish.record import CompactRecorder
    from burnish.train import LearnerBuilder
    from burnish.train.metric import AccuracyMetric, LossMetric
    from burnish.train.renderer import CliMetricsRenderer

    from examples.mnist.data import MnistBatcher

    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    batcher = MnistBatcher()
    loader_train = DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
    loader_valid = DataLoaderBuilder(batcher).batch_size(config.valid_batch_size)
    bn.seed(config.seed)
    model = SmallCnn()
    learner = (
        LearnerBuilder(workdir)
        .metric_train_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .early_stopping(TargetReached(config.target))
        .renderer(CliMetricsRenderer())
        .num_epochs(config.epochs)
        .build(
            model,
            AdamConfig(epsilon=config.epsilon).init(),
            config.scheduler(config.iterations(len(train_set))),
        )
    )
    start = time.perf_counter()
    result = learner.fit(loader_train.build(train_set), loader_valid.build(test_set))
    seconds = time.perf_counter() - start
    exit_if_interrupted(result, "no time to accuracy to report", resume=None)  # Ctrl-C: 130
    store = learner.options.store()
    epochs = result.epochs_completed
    accuracy = store.find_metric("Accuracy", epochs, Aggregate.MEAN, Split.VALID)
    return Outcome(seconds, epochs, accuracy)


def train_plain(config: RecipeConfig, workdir: Path) -> Outcome:
    """The same recipe as a hand-written PyTorch loop (tensor slicing in the same order)."""
    from examples.mnist.data import MEAN, STD

    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    images = (torch.as_tensor(train_set.images.copy()), torch.as_tensor(train_set.labels))
    test = (torch.as_tensor(test_set.images.copy()), torch.as_tensor(test_set.labels))
    bn.seed(config.seed)
    model = SmallCnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.peak_lr, eps=config.epsilon)
    n, total = len(images[1]), config.iterations(len(images[1]))

    def normalised(pixels: torch.Tensor) -> torch.Tensor:
        return (pixels.float() / 255 - MEAN) / STD

    start, step, accuracy, epoch = time.perf_counter(), 0, 0.0, 0
    for epoch in range(1, config.epochs + 1):
        model.train()
        order = torch.from_numpy(np.random.default_rng([config.seed, epoch - 1]).permutation(n))
        loss_sum, correct = torch.zeros(()), torch.zeros((), dtype=torch.int64)
        for i in range(0, n, config.batch_size):
            index = order[i : i + config.batch_size]
            targets = images[1][index]
            output = model(normalised(images[0][index]))
            loss = F.cross_entropy(output, targets)
            for group in optimizer.param_groups:
                group["lr"] = config.lr_at(step, total)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            loss_sum += loss.detach() * len(targets)
            correct += (output.detach().argmax(dim=1) == targets).sum()
        accuracy = evaluate(model, test, normalised, config.valid_batch_size)
        torch.save(
            {"model": model.state_dict(), "optim": optimizer.state_dict()},
            workdir / f"epoch-{epoch}.pt",
        )
        print(
            f"epoch {epoch}: train loss {loss_sum.item() / n:.4f} "
            f"acc {100 * correct.item() / n:.2f} | test acc {accuracy:.2f}",
            flush=True,
        )
        if accuracy >= config.target:
            break
    return Outcome(time.perf_counter() - start, epoch, accuracy)


def evaluate(model: nn.Module, test, normalised, batch_size: int) -> float:
    """Test accuracy in percent."""
    model.eval()
    correct = torch.zeros((), dtype=torch.int64)
    with torch.no_grad():
        for i in range(0, len(test[1]), batch_size):
            output = model(normalised(test[0][i : i + batch_size]))
            correct += (output.argmax(dim=1) == test[1][i : i + batch_size]).sum()
    return 100.0 * correct.item() / len(test[1])


def main(argv: list[str] | None = None) -> Outcome:
    """Run one version; prints and returns the outcome."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--plain", action="store_true", help="the plain PyTorch loop")
    parser.add_argument("--epochs", type=int, default=2, help="epochs the schedule spans")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    config = RecipeConfig().with_epochs(args.epochs)
    with tempfile.TemporaryDirectory(prefix="burnish-tta-") as workdir:
        run = train_plain if args.plain else train_learner
        outcome = run(config, Path(workdir))
    verdict = "reached" if outcome.accuracy >= config.target else "did NOT reach"
    print(
        f"{'plain PyTorch' if args.plain else 'burnish Learner'}: {verdict} "
        f"{config.target:.1f}% ({outcome.accuracy:.2f}%) after {outcome.epochs} epoch(s) "
        f"in {outcome.seconds:.1f} s"
    )
    return outcome


if __name__ == "__main__":
    main()
