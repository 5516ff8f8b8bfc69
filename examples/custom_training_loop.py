"""The Burn book's custom training loop, in Python: no Learner, just explicit gradients.

    python -m examples.custom_training_loop                     # the book's config: 10 epochs
    python -m examples.custom_training_loop --epochs 1 --limit 2000
    python -m examples.custom_training_loop --precision fp16     # or bf16; default fp32

Each iteration: forward, loss, `bn.backward(loss)` -> `GradientsParams.from_grads` ->
`optim.step(lr, model, grads)`. Validation runs on `bn.valid(model)` (eval mode, no autograd,
same parameter storage). Per-iteration lines are printed as in the book, but the losses and
accuracies stay on the device and are read back in one transfer every `--print-every`
iterations, so the loop never waits on the device once per step.

`--precision bf16|fp16` runs forward and loss under `torch.autocast`; parameters, gradients and
optimizer state stay float32. fp16 adds dynamic loss scaling with `GradScaler`: the loss is
scaled for `bn.backward`, `scaler.step` unscales the returned gradients and skips a step whose
gradients overflowed, `scaler.update()` adjusts the scale.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.data.dataset.vision import MnistDataset
from burnish.nn.loss import CrossEntropyLoss
from burnish.optim import AdamConfig, GradientsParams, GradScaler

from examples.mnist.data import MnistBatcher
from examples.mnist.model import ModelConfig

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))  # offline: the repo's MNIST


@bn.config
class TrainingConfig:
    """Everything the run needs, saved as one JSON (Burn: `MnistTrainingConfig`)."""

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


def accuracy(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Percentage of correct predictions, as a 0-dim tensor (no host sync)."""
    return (output.argmax(dim=1) == targets).float().mean() * 100


class LinePrinter:
    """Prints `[Split - Epoch e - Iteration i] Loss … | Accuracy … %` lines, batched."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.pending: list[tuple[str, int, int, torch.Tensor, torch.Tensor]] = []

    def add(self, split: str, epoch: int, iteration: int, loss, acc) -> None:
        self.pending.append((split, epoch, iteration, loss.detach(), acc.detach()))
        if len(self.pending) >= self.every:
            self.flush()

    def flush(self) -> list[float]:
        """Print the pending lines (one device transfer); returns their accuracies."""
        if not self.pending:
            return []
        values = torch.stack([torch.stack([p[3], p[4]]) for p in self.pending]).tolist()
        for (split, epoch, iteration, _, _), (loss, acc) in zip(self.pending, values):
            print(
                f"[{split} - Epoch {epoch} - Iteration {iteration}] "
                f"Loss {loss:.3f} | Accuracy {acc:.3f} %"
            )
        self.pending.clear()
        return [acc for _, acc in values]


PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """`torch.autocast` to the half type of `precision` (nothing for fp32)."""
    dtype = PRECISIONS[precision]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def run(
    config: TrainingConfig,
    device: torch.device,
    limit: int | None,
    every: int,
    precision: str = "fp32",
) -> float:
    """Train, validating after each epoch; returns the last test accuracy (%)."""
    bn.seed(config.seed)
    model = config.model.init(device)
    optim = config.optimizer.init()
    loss_fn = CrossEntropyLoss(None, device)
    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    if limit is not None:
        train_set = PartialDataset(train_set, 0, min(limit, len(train_set)))
        test_set = PartialDataset(test_set, 0, min(limit, len(test_set)))
    builder = DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size)
    builder = builder.shuffle(config.seed).num_workers(config.num_workers)
    loader_train = builder.build(train_set).to_device(device)
    loader_test = builder.build(test_set).to_device(device)
    printer = LinePrinter(every)
    scaler = GradScaler(enabled=precision == "fp16")  # a pass-through unless fp16
    test_accuracy = 0.0
    for epoch in range(1, config.num_epochs + 1):
        for iteration, batch in enumerate(loader_train.iter()):
            with autocast(device, precision):
                output = model(batch.images).float()  # the loss in float32
                loss = loss_fn(output, batch.targets)
            printer.add("Train", epoch, iteration, loss, accuracy(output, batch.targets))
            grads = GradientsParams.from_grads(bn.backward(scaler.scale(loss)), model)
            model = scaler.step(optim, config.lr, model, grads)  # unscale; skip on inf/NaN
            scaler.update()
        printer.flush()
        with autocast(device, precision):
            test_accuracy = validate(bn.valid(model), loader_test, loss_fn, epoch, printer)
    return test_accuracy


def validate(model_valid, loader, loss_fn, epoch: int, printer: LinePrinter) -> float:
    """One pass over the test set; returns the item-weighted accuracy (%)."""
    correct, total = torch.zeros((), device=next(model_valid.parameters()).device), 0
    for iteration, batch in enumerate(loader.iter()):
        output = model_valid(batch.images).float()
        loss = loss_fn(output, batch.targets)
        printer.add("Valid", epoch, iteration, loss, accuracy(output, batch.targets))
        correct += (output.argmax(dim=1) == batch.targets).sum()
        total += len(batch.targets)
    printer.flush()
    test_accuracy = 100.0 * correct.item() / max(total, 1)
    print(f"[Valid - Epoch {epoch}] Test accuracy {test_accuracy:.2f} % on {total} items")
    return test_accuracy


def main(argv: list[str] | None = None) -> float:
    """Parse the arguments and run; returns the final test accuracy (%)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=10, help="number of epochs (default 10)")
    parser.add_argument("--limit", type=int, help="items per split (default: all of MNIST)")
    parser.add_argument("--workers", type=int, default=4, help="data loader workers")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--print-every", type=int, default=50, help="lines per device read")
    parser.add_argument(
        "--precision", choices=list(PRECISIONS), default="fp32", help="mixed precision"
    )
    args = parser.parse_args(argv)
    config = TrainingConfig(ModelConfig(num_classes=10, hidden_size=1024), AdamConfig())
    config = config.with_num_epochs(args.epochs).with_num_workers(args.workers)
    return run(config, bn.device(args.device), args.limit, args.print_every, args.precision)


if __name__ == "__main__":
    from examples.interrupted import run_hand_written_loop

    run_hand_written_loop(main, "this loop keeps no checkpoint; nothing was saved")
