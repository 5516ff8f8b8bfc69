"""Overhead of burnish's training loops over a hand-written PyTorch loop.

One epoch of the guide model (hidden 1024, batch 64) on the first `iterations * 64` MNIST
training images, then validation on 1,000 test images, then one checkpoint. Contenders:

  plain     hand loop: `torch.optim.Adam`, batches by direct tensor slicing of the MNIST
            tensors in the loader's shuffled order (the same normalisation as `MnistBatcher`),
            loss and accuracy accumulated on the device each step, read once per epoch;
            validation; `torch.save` of model and optimizer state.
  custom    burnish custom loop: burnish `DataLoader` + `MnistBatcher`, `bn.backward` ->
            `GradientsParams.from_grads` -> `optim.step`, same accumulation, validation and
            `torch.save` checkpoint.
  learner   burnish `Learner`: Accuracy + Loss train/valid metrics, file metric loggers, the
            experiment log, a per-epoch `CompactRecorder` checkpoint, `CliMetricsRenderer`.
  lightning PyTorch Lightning (informational, when installed): the same metrics logged with
            `self.log(prog_bar=True)`, CSV logger, per-epoch `ModelCheckpoint`, progress bar.

All contenders use the same model class, seed, thread count and data; the timed region is
the epoch (train + valid + checkpoint), after imports, dataset loading and model creation.

    .venv/bin/python -m benchmarks.overhead child learner --iterations 300 --threads 1
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

BATCH, HIDDEN, VALID_ITEMS, LR, SEED = 64, 1024, 1000, 1e-4, 42
CONTENDERS = ("plain", "custom", "learner", "lightning")
TARGETS = {"custom": harness.at_most(1.02), "learner": harness.at_most(1.03)}
RSS_TARGETS = {"learner": harness.at_most(1.10)}


def children(names, iterations: int, threads: int) -> dict:
    """Per contender name, a function that runs it once in a fresh `overhead child` process."""
    return {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv(
                    "overhead", name, "--iterations", iterations, "--threads", threads
                ),
                threads,
            )
        )
        for name in names
    }


def run(settings: harness.Settings, log) -> list[harness.Row]:
    """Run every contender `settings.runs` times, alternating; rows for time and peak RSS."""
    if settings.device is not None:  # --device: the accelerator version, data on the device
        from benchmarks import device

        return device.run(settings, log, "overhead")
    iterations = settings.iterations or (100 if settings.quick else 300)
    lightning = settings.lightning and harness.lightning_available()
    names = [n for n in CONTENDERS if n != "lightning" or lightning]
    contenders = children(names, iterations, settings.threads)
    log(f"overhead: {iterations} iterations x {settings.runs} runs, contenders {names}")
    results = harness.alternate(contenders, settings.runs, log)
    label = f"overhead ({iterations} it)"
    rows = harness.rows_for(label, results, "seconds", "epoch time", "s", "plain", TARGETS)
    rows += harness.rows_for(label, results, "max_rss_mib", "peak RSS", "MiB", "plain", RSS_TARGETS)
    for row in rows:
        if row.contender == "lightning":
            row.note = "informational"
    if "lightning" not in names:
        why = "not installed" if settings.lightning else "skipped (--no-lightning)"
        rows.append(harness.Row(label, "lightning", "epoch time", "s", None, [], note=why))
    return rows


# -- the contenders (run in a child process) ------------------------------------------------


def _data(iterations: int):
    from burnish.data.dataset import PartialDataset
    from burnish.data.dataset.vision import MnistDataset

    train = MnistDataset.train()
    test = MnistDataset.test()
    items = min(iterations * BATCH, len(train))
    return PartialDataset(train, 0, items), PartialDataset(test, 0, VALID_ITEMS), train, test


def _loaders(train_set, valid_set):
    from burnish.data.dataloader import DataLoaderBuilder

    from examples.mnist.data import MnistBatcher

    builder = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH)
    return builder.shuffle(SEED).build(train_set), builder.build(valid_set)


def _model():
    import burnish as bn

    from examples.mnist.model import ModelConfig

    bn.seed(SEED)
    return ModelConfig(num_classes=10, hidden_size=HIDDEN).init("cpu")


def plain(iterations: int, workdir: Path) -> float:
    """The hand-written loop; returns the seconds of its epoch."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from examples.mnist.data import MEAN, STD

    train_set, _, train, test = _data(iterations)
    n = len(train_set)
    images, labels = torch.as_tensor(train.images[:n].copy()), torch.as_tensor(train.labels[:n])
    valid_images = torch.as_tensor(test.images[:VALID_ITEMS].copy())
    valid_labels = torch.as_tensor(test.labels[:VALID_ITEMS])
    model = _model()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)

    def batch(source: torch.Tensor, index) -> torch.Tensor:
        return (source[index].float() / 255 - MEAN) / STD

    start = time.perf_counter()
    model.train()
    order = torch.from_numpy(np.random.default_rng([SEED, 0]).permutation(n))
    loss_sum, correct = torch.zeros(()), torch.zeros((), dtype=torch.int64)
    for i in range(0, n, BATCH):
        index = order[i : i + BATCH]
        targets = labels[index]
        output = model(batch(images, index))
        loss = F.cross_entropy(output, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach() * len(targets)
        correct += (output.detach().argmax(dim=1) == targets).sum()
    train_line = f"train loss {loss_sum.item() / n:.4f} acc {100 * correct.item() / n:.2f}"
    model.eval()
    loss_sum, correct = torch.zeros(()), torch.zeros((), dtype=torch.int64)
    with torch.no_grad():
        for i in range(0, VALID_ITEMS, BATCH):
            targets = valid_labels[i : i + BATCH]
            output = model(batch(valid_images, slice(i, i + BATCH)))
            loss_sum += F.cross_entropy(output, targets) * len(targets)
            correct += (output.argmax(dim=1) == targets).sum()
    torch.save(
        {"model": model.state_dict(), "optim": optimizer.state_dict()}, workdir / "epoch-1.pt"
    )
    seconds = time.perf_counter() - start
    print(train_line, f"| valid acc {100 * correct.item() / VALID_ITEMS:.2f}")
    return seconds


def custom(iterations: int, workdir: Path) -> float:
    """The burnish custom loop (the Burn book's), same work as `plain`."""
    import torch

    import burnish as bn
    from burnish.nn.loss import CrossEntropyLossConfig
    from burnish.optim import AdamConfig, GradientsParams

    train_set, valid_set, _, _ = _data(iterations)
    loader_train, loader_valid = _loaders(train_set, valid_set)
    model = _model()
    optim = AdamConfig().init()
    loss_fn = CrossEntropyLossConfig().init("cpu")

    start = time.perf_counter()
    model.train()
    loss_sum, correct, n = torch.zeros(()), torch.zeros((), dtype=torch.int64), 0
    for batch in loader_train.iter():
        output = model(batch.images)
        loss = loss_fn(output, batch.targets)
        grads = GradientsParams.from_grads(bn.backward(loss), model)
        model = optim.step(LR, model, grads)
        loss_sum += loss.detach() * len(batch.targets)
        correct += (output.detach().argmax(dim=1) == batch.targets).sum()
        n += len(batch.targets)
    train_line = f"train loss {loss_sum.item() / n:.4f} acc {100 * correct.item() / n:.2f}"
    model_valid = bn.valid(model)
    loss_sum, correct = torch.zeros(()), torch.zeros((), dtype=torch.int64)
    with torch.no_grad():
        for batch in loader_valid.iter():
            output = model_valid(batch.images)
            loss_sum += loss_fn(output, batch.targets) * len(batch.targets)
            correct += (output.argmax(dim=1) == batch.targets).sum()
    torch.save({"model": model.state_dict(), "optim": optim.to_record()}, workdir / "epoch-1.pt")
    seconds = time.perf_counter() - start
    print(train_line, f"| valid acc {100 * correct.item() / VALID_ITEMS:.2f}")
    return seconds


def learner(iterations: int, workdir: Path, compile_model: bool = False) -> float:
    """The burnish Learner with metrics, file loggers, checkpoint and the CLI renderer."""
    from benchmarks.models import learner_builder
    from burnish.optim import AdamConfig
    from burnish.record import CompactRecorder

    train_set, valid_set, _, _ = _data(iterations)
    loader_train, loader_valid = _loaders(train_set, valid_set)
    builder = learner_builder(workdir / "artifacts").with_file_checkpointer(CompactRecorder())
    if compile_model:
        builder = builder.compile()
    learner = builder.build(_model(), AdamConfig().init(), LR)
    start = time.perf_counter()
    learner.fit(loader_train, loader_valid)
    return time.perf_counter() - start


def lightning(iterations: int, workdir: Path) -> float:
    """PyTorch Lightning with the same metrics through `self.log(prog_bar=True)`."""
    import lightning as L
    import torch
    import torch.nn.functional as F
    from lightning.pytorch.loggers import CSVLogger

    train_set, valid_set, _, _ = _data(iterations)
    loader_train, loader_valid = _loaders(train_set, valid_set)

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = _model()

        def _step(self, batch, split: str):
            output = self.model(batch.images)
            loss = F.cross_entropy(output, batch.targets)
            accuracy = (output.argmax(dim=1) == batch.targets).float().mean() * 100
            size = len(batch.targets)
            self.log(f"{split}_loss", loss, prog_bar=True, batch_size=size)
            self.log(f"{split}_accuracy", accuracy, prog_bar=True, batch_size=size)
            return loss

        def training_step(self, batch, index):
            return self._step(batch, "train")

        def validation_step(self, batch, index):
            self._step(batch, "valid")

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=LR)

    module = Module()
    trainer = L.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(workdir / "lightning"),
        default_root_dir=workdir / "lightning",
        num_sanity_val_steps=0,
        enable_model_summary=False,
    )
    start = time.perf_counter()
    trainer.fit(module, loader_train, loader_valid)
    return time.perf_counter() - start


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.overhead child")
    parser.add_argument("contender", choices=[*CONTENDERS, "learner-compile"])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    workdir = Path(tempfile.mkdtemp(prefix="burnish-bench-"))
    try:
        if args.contender == "learner-compile":
            seconds = learner(args.iterations, workdir, compile_model=True)
        else:
            seconds = globals()[args.contender](args.iterations, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    harness.report({"seconds": seconds, "iterations": args.iterations})


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks -b overhead   (or: ... benchmarks.overhead child X)")
