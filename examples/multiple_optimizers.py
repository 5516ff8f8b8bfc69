"""Several learning rates and optimizers for parts of one model (the Burn book's sections
"Multiple optimizers" and "Custom Type").

    python -m examples.multiple_optimizers --epochs 1 --limit 2000

Gradients are values, so they can be split: `GradientsParams.from_params` takes the bias of
`linear1` out of `grads`, `from_grads` takes the rest, and ONE optimizer is stepped twice in
the same iteration with different learning rates. A second optimizer (SGD) can as well own a
part of the model (`--two-optimizers`). The loop state lives in a small class holding the
model and its optimizer, with a `step(batch)` method (the book's custom type pattern).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.data.dataset.vision import MnistDataset
from burnish.nn.loss import CrossEntropyLoss
from burnish.optim import AdamConfig, GradientsParams, MomentumConfig, Optimizer, SgdConfig

from examples.mnist.data import MnistBatch, MnistBatcher
from examples.mnist.model import Model, ModelConfig

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))  # offline: the repo's MNIST


class Trainer:
    """The model and its optimizer(s); `step(batch)` runs one iteration (Burn: custom type).

    Args:
        model: the model to train.
        optim: optimizer of every parameter (the linear1 bias at `lr * bias_lr_factor`).
        lr: base learning rate.
        bias_lr_factor: learning-rate factor of `model.linear1.bias`.
        second: optional optimizer owning `model.linear2` (at `second_lr`).
    """

    def __init__(
        self,
        model: Model,
        optim: Optimizer,
        lr: float,
        bias_lr_factor: float = 0.1,
        second: Optimizer | None = None,
        second_lr: float = 0.01,
    ) -> None:
        self.model, self.optim, self.lr = model, optim, lr
        self.bias_lr_factor = bias_lr_factor
        self.second, self.second_lr = second, second_lr
        self.loss = CrossEntropyLoss()

    def step(self, batch: MnistBatch) -> torch.Tensor:
        """One iteration; returns the loss (a 0-dim tensor, not read back)."""
        loss = self.loss(self.model(batch.images), batch.targets)
        grads = bn.backward(loss)
        # The bias of linear1 gets a tenth of the learning rate...
        bias = self.model.linear1.bias
        grads_bias = GradientsParams.from_params(grads, self.model.linear1, [bias])
        if self.second is not None:
            # ...linear2 belongs to another optimizer...
            grads_head = GradientsParams.from_module(grads, self.model.linear2)
            self.model = self.second.step(self.second_lr, self.model, grads_head)
        # ...and the rest uses the base learning rate, all with the same optimizer.
        grads_rest = GradientsParams.from_grads(grads, self.model)
        self.model = self.optim.step(self.lr * self.bias_lr_factor, self.model, grads_bias)
        self.model = self.optim.step(self.lr, self.model, grads_rest)
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, loader) -> float:
        """Accuracy (%) of `bn.valid(model)` on `loader`."""
        model: nn.Module = bn.valid(self.model)
        correct, total = torch.zeros(()), 0
        for batch in loader.iter():
            correct += (model(batch.images).argmax(1) == batch.targets).sum().cpu()
            total += len(batch.targets)
        return 100.0 * correct.item() / max(total, 1)


def main(argv: list[str] | None = None) -> float:
    """Train for `--epochs` and return the test accuracy (%)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit", type=int, help="items per split (default: all of MNIST)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--two-optimizers", action="store_true", help="SGD owns linear2")
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args(argv)

    bn.seed(42)
    second = SgdConfig(momentum=MomentumConfig()).init() if args.two_optimizers else None
    trainer = Trainer(ModelConfig(10, 256).init(), AdamConfig().init(), args.lr, second=second)
    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    if args.limit is not None:
        train_set = PartialDataset(train_set, 0, min(args.limit, len(train_set)))
        test_set = PartialDataset(test_set, 0, min(args.limit, len(test_set)))
    builder = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42)
    builder = builder.num_workers(args.workers)
    loader_train, loader_test = builder.build(train_set), builder.build(test_set)
    for epoch in range(1, args.epochs + 1):
        losses = torch.stack([trainer.step(batch) for batch in loader_train.iter()])
        accuracy = trainer.evaluate(loader_test)
        print(
            f"[Epoch {epoch}] train loss {losses.mean().item():.3f} | "
            f"test accuracy {accuracy:.2f} %"
        )
    print(f"optimizer state: {sorted(trainer.optim.to_record()['state'])}")
    if second is not None:
        print(f"second optimizer state: {sorted(second.to_record()['state'])}")
    return accuracy


if __name__ == "__main__":
    from examples.interrupted import run_hand_written_loop

    run_hand_written_loop(main, "this loop keeps no checkpoint; nothing was saved")
