"""Training on an accelerator (`--device cuda`): burnish's loops against a plain eager loop.

Three models, the data already on the device (each batch a slice of device tensors, in the
same order for every contender):

  guide     the guide's MNIST model (hidden 512, batch 64), MNIST images;
  resnet18  a ResNet-18 for 3x32x32 images (`benchmarks/models.py`, no torchvision), batch
            256, random images and labels (the speed of a step does not depend on the pixels);
  gpt       the GPT of `examples/language_model` (4 blocks, width 256, context 128: 3.3M
            parameters; `benchmarks/language_model.py`'s), batch 32 windows of the standard
            library's bytes; "accuracy" is its next-byte accuracy (Adam here, as every model of
            this benchmark: the full recipe is `benchmarks/language_model.py`'s).

Contenders, one fresh process each, alternating:

  plain           `torch.optim.Adam(foreach)`, `zero_grad` / `backward` / `step`, loss and
                  accuracy summed on the device, read once per epoch;
  custom          burnish's custom loop: `bn.backward` -> `GradientsParams` -> `optim.step`;
  learner         the Learner with Accuracy + Loss metrics, file loggers, the CLI renderer;
  learner-bf16    the same with `mixed_precision("bf16")`;
  learner-graphs  the same with `compile(step=True, mode="reduce-overhead")` (on a CPU, where
                  there are no CUDA graphs: `compile(step=True, backend="aot_eager")`, to
                  prove the path only);
  lightning       PyTorch Lightning, when installed (informational).

The timed region is `epochs` epochs of training (and, for `time_to_accuracy`, validation
after each), after a warm-up of `WARMUP` iterations that every contender runs first on its own
copy of the model (CUDA context, cuDNN autotuning, torch's compile caches; learner-graphs
still traces its step again in the timed run, from warm caches). Targets, on a GPU: learner /
plain <= 1.03 on every model, learner-graphs / plain <= 0.7 on the guide model.

    .venv/bin/python -m benchmarks.device child learner --model guide --device cuda
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from typing import Any

from benchmarks import harness
from benchmarks.models import gpt, gpt_config, resnet18

CONTENDERS = ("plain", "custom", "learner", "learner-bf16", "learner-graphs", "lightning")
MODELS = {"guide": 64, "resnet18": 256, "gpt": 32}  # model -> batch size
LR, SEED, WARMUP = 1e-3, 42, 5
TARGETS = {
    "guide": {"learner": harness.at_most(1.03), "learner-graphs": harness.at_most(0.7)},
    "resnet18": {"learner": harness.at_most(1.03)},
    "gpt": {"learner": harness.at_most(1.03)},
}


def run(settings: harness.Settings, log, benchmark: str = "overhead") -> list[harness.Row]:
    """Every contender on both models, `settings.runs` times each, alternating."""
    device = settings.device
    iterations = settings.iterations or (50 if settings.quick else 200)
    epochs = 1 if benchmark == "overhead" else (1 if settings.quick else 3)
    lightning = settings.lightning and harness.lightning_available()
    names = [n for n in CONTENDERS if n != "lightning" or lightning]
    rows: list[harness.Row] = []
    for model in settings.models or MODELS:
        contenders = {
            name: (
                lambda name=name, model=model: harness.run_child(
                    harness.module_argv(
                        "device",
                        name,
                        "--model",
                        model,
                        "--device",
                        device,
                        "--iterations",
                        iterations,
                        "--epochs",
                        epochs,
                        "--threads",
                        settings.threads,
                        "--benchmark",
                        benchmark,
                    ),
                    settings.threads,
                )
            )
            for name in names
        }
        log(f"{benchmark} on {device}, {model}: {iterations} it x {epochs} epoch(s), {names}")
        results = harness.alternate(contenders, settings.runs, log)
        label = f"{benchmark} {device} {model}"
        targets = TARGETS[model] if device.startswith("cuda") else {}
        rows += harness.rows_for(label, results, "seconds", "time", "s", "plain", targets)
        for row in rows[-len(names) :]:
            accuracy = harness.median([r["accuracy"] for r in results[row.contender]])
            notes = [] if math.isnan(accuracy) else [f"acc {accuracy:.2f}%"]  # overhead: none
            if row.contender == "lightning":
                notes.append("informational")
            if not device.startswith("cuda"):
                notes.append("not a GPU: no CUDA graphs, no GPU targets")
            row.note = "; ".join(notes)
    return rows


# -- the models and data (in the child) ---------------------------------------------------------


def model_for(name: str, device):
    import burnish as bn

    bn.seed(SEED)
    if name == "resnet18":
        return resnet18().to(device)
    if name == "gpt":
        return gpt().to(device)
    from examples.mnist.model import ModelConfig

    return ModelConfig(num_classes=10, hidden_size=512).init(device)


class DeviceBatches:
    """Batches sliced from tensors already on the device, in a fixed shuffled order."""

    def __init__(self, images, targets, batch_size: int, shuffle: bool) -> None:
        import torch

        from examples.mnist.data import MnistBatch

        self.batch_type = MnistBatch
        self.images, self.targets, self.batch_size = images, targets, batch_size
        generator = torch.Generator().manual_seed(SEED)
        n = len(targets)
        order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
        self.order = order.to(images.device)
        self.dataset = range(n)

    def __len__(self) -> int:
        return -(-len(self.targets) // self.batch_size)

    def __iter__(self):
        for start in range(0, len(self.targets), self.batch_size):
            index = self.order[start : start + self.batch_size]
            targets = self.targets[index]  # a sequence's: every position's, flattened
            yield self.batch_type(
                self.images[index], targets.flatten() if targets.ndim > 1 else targets
            )


def data_for(name: str, device, iterations: int, batch: int | None = None):
    """(train batches, valid batches) on `device`: `iterations` train batches, up to 8 valid,
    of `batch` examples (the model's benchmark batch size by default)."""
    import numpy as np
    import torch

    batch, valid_batches = batch or MODELS[name], min(8, max(2, iterations))
    if name == "guide":
        from burnish.data.dataset.vision import MnistDataset

        from examples.mnist.data import MEAN, STD

        def tensors(dataset, n):
            images = torch.as_tensor(dataset.images[:n].copy()).float().div(255).sub(MEAN)
            return images.div(STD).to(device), torch.as_tensor(dataset.labels[:n]).to(device)

        train = tensors(MnistDataset.train(), min(iterations * batch, 60000))
        valid = tensors(MnistDataset.test(), valid_batches * batch)
    elif name == "gpt":
        from examples.language_model.data import Corpus

        length = gpt_config().context_length
        corpus = Corpus.stdlib(length, max_train_bytes=(iterations * batch + 1) * length)
        count = min(iterations * batch, len(corpus.train))

        def tensors(dataset, n):
            windows = torch.from_numpy(dataset.get_stacked(np.arange(n)).astype(np.int64))
            return windows[:, :-1].to(device), windows[:, 1:].to(device)

        train = tensors(corpus.train, count)
        valid = tensors(corpus.valid, valid_batches * batch)
    else:
        generator = torch.Generator().manual_seed(SEED)

        def tensors(n):
            images = torch.randn(n, 3, 32, 32, generator=generator)
            return images.to(device), torch.randint(0, 10, (n,), generator=generator).to(device)

        train, valid = tensors(iterations * batch), tensors(valid_batches * batch)
    return DeviceBatches(*train, batch, True), DeviceBatches(*valid, batch, False)


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- the contenders -----------------------------------------------------------------------------


def plain(model, train, valid, epochs: int, device, validate: bool) -> float:
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.Adam(model.parameters(), lr=LR, foreach=True)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for _ in range(epochs):
        model.train()
        loss_sum = torch.zeros((), device=device)
        for batch in train:
            output = model(batch.images)
            loss = F.cross_entropy(output, batch.targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
        if validate:
            correct = _validate(model, valid, device)
    synchronize(device)
    return _accuracy(correct, valid) if validate else float("nan")


def custom(model, train, valid, epochs: int, device, validate: bool) -> float:
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.optim import AdamConfig, GradientsParams

    optim = AdamConfig(epsilon=1e-8).init()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for _ in range(epochs):
        model.train()
        loss_sum = torch.zeros((), device=device)
        for batch in train:
            loss = F.cross_entropy(model(batch.images), batch.targets)
            model = optim.step(LR, model, GradientsParams.from_grads(bn.backward(loss), model))
            loss_sum += loss.detach()
        if validate:
            correct = _validate(bn.valid(model), valid, device)
    synchronize(device)
    return _accuracy(correct, valid) if validate else float("nan")


def _validate(model, valid, device):
    import torch

    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    with torch.no_grad():
        for batch in valid:
            correct += (model(batch.images).argmax(dim=1) == batch.targets).sum()
    return correct


def _accuracy(correct, valid) -> float:
    return 100 * correct.item() / valid.targets.numel()


def learner(model, train, valid, epochs: int, device, validate: bool, configure=None) -> float:
    from burnish.optim import AdamConfig
    from burnish.train import LearnerBuilder
    from burnish.train.metric import AccuracyMetric, LossMetric
    from burnish.train.renderer import CliMetricsRenderer

    with tempfile.TemporaryDirectory(prefix="burnish-device-") as workdir:
        builder = (
            LearnerBuilder(workdir)
            .metric_train_numeric(AccuracyMetric())
            .metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric())
            .metric_valid_numeric(LossMetric())
            .renderer(CliMetricsRenderer())
            .num_epochs(epochs)
            .devices([device])
        )
        if configure is not None:
            builder = configure(builder)
        learner = builder.build(model, AdamConfig(epsilon=1e-8).init(), LR)
        # The overhead benchmark trains without validation, as its plain loop does.
        result = learner.fit(train, valid if validate else None)
        synchronize(device)
        if not validate:
            return float("nan")
        return _accuracy(_validate(result.model, valid, device), valid)


def lightning(model, train, valid, epochs: int, device, validate: bool) -> float:
    import lightning as L
    import torch
    import torch.nn.functional as F

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def training_step(self, batch, index):
            loss = F.cross_entropy(self.model(batch.images), batch.targets)
            self.log("train_loss", loss, prog_bar=True, batch_size=len(batch.targets))
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=LR, foreach=True)

    with tempfile.TemporaryDirectory(prefix="burnish-device-") as workdir:
        trainer = L.Trainer(
            max_epochs=epochs,
            accelerator="gpu" if device.type == "cuda" else "cpu",
            devices=1,
            logger=False,
            enable_checkpointing=False,
            default_root_dir=workdir,
            enable_model_summary=False,
        )
        trainer.fit(Module(), train)
    synchronize(device)
    return _accuracy(_validate(model, valid, device), valid) if validate else float("nan")


def _graphs(device):
    if device.type == "cuda":
        return lambda b: b.compile(step=True, mode="reduce-overhead")
    return lambda b: b.compile(step=True, backend="aot_eager")


def contender(name: str, device):
    """The function that trains with contender `name`."""
    import functools

    if name == "learner-bf16":
        return functools.partial(learner, configure=lambda b: b.mixed_precision("bf16"))
    if name == "learner-graphs":
        return functools.partial(learner, configure=_graphs(device))
    return {"plain": plain, "custom": custom, "learner": learner, "lightning": lightning}[name]


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.device child")
    parser.add_argument("contender", choices=CONTENDERS)
    parser.add_argument("--model", choices=tuple(MODELS), default="guide")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, help="default: the model's, in MODELS")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--benchmark", choices=("overhead", "time_to_accuracy"))
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    import torch

    device = torch.device(args.device)
    train, valid = data_for(args.model, device, args.iterations, args.batch_size)
    validate = args.benchmark == "time_to_accuracy"
    function = contender(args.contender, device)
    # Warm-up on a throwaway model: CUDA context, cuDNN autotuning, compilation.
    size = min(WARMUP, args.iterations) * train.batch_size
    warm = DeviceBatches(train.images[:size], train.targets[:size], train.batch_size, False)
    function(model_for(args.model, device), warm, valid, 1, device, False)
    model = model_for(args.model, device)
    synchronize(device)
    start = time.perf_counter()
    accuracy = function(model, train, valid, args.epochs, device, validate)
    seconds = time.perf_counter() - start
    result: dict[str, Any] = {"seconds": seconds, "accuracy": accuracy, "device": str(device)}
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
    harness.report(result)


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks -b overhead --device cuda")
