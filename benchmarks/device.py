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

The contenders, one fresh process each, alternating, are `benchmarks/device_loops.py`'s: plain
(and plain-bf16, its autocast peer), custom, learner, learner-bf16, learner-graphs, lightning.
A run longer than the data (MNIST holds 937 batches of 64) goes round the same batches again.

The timed region is `epochs` epochs of training (and, for `time_to_accuracy`, validation
after each), after a warm-up of `WARMUP` iterations that every contender runs first on its own
copy of the model (CUDA context, cuDNN autotuning, torch's compile caches; learner-graphs
still traces its step again in the timed run, from warm caches). Targets, on a GPU: learner /
plain <= 1.03 on every model, learner-bf16 / plain-bf16 <= 1.03, learner-graphs / plain <= 0.7
on the guide model. With `--lengths SHORT LONG` (overhead only) every contender runs at both
lengths and the table shows its time per iteration (the slope, which the targets then hold)
and its fixed cost per fit (the intercept): `benchmarks/two_lengths.py`.

    .venv/bin/python -m benchmarks.device child learner --model guide --device cuda
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from benchmarks import harness, two_lengths
from benchmarks.device_loops import CONTENDERS, contender, synchronize
from benchmarks.models import gpt, gpt_config, resnet18

MODELS = {"guide": 64, "resnet18": 256, "gpt": 32}  # model -> batch size
# Distinct train batches on the device at most (at the benchmark's batch size): MNIST's 60,000
# images, 1,000 of the GPT's windows, 300 of the ResNet's random images; a longer run goes round.
DISTINCT = {"guide": 60000 // 64, "resnet18": 300, "gpt": 1000}
SEED, WARMUP = 42, 5
TARGETS = {
    "guide": {"learner": harness.at_most(1.03), "learner-graphs": harness.at_most(0.7)},
    "resnet18": {"learner": harness.at_most(1.03)},
    "gpt": {"learner": harness.at_most(1.03)},
}
BF16_TARGET = {"learner-bf16": harness.at_most(1.03)}  # against plain-bf16, on a GPU


def run(settings: harness.Settings, log, benchmark: str = "overhead") -> list[harness.Row]:
    """Every contender on every model, `settings.runs` times each, alternating; with
    `settings.lengths` (overhead only), at both lengths: per-iteration and fixed costs."""
    device = settings.device
    assert device is not None
    iterations = settings.iterations or (50 if settings.quick else 200)
    epochs = 1 if benchmark == "overhead" else (1 if settings.quick else 3)
    lightning = settings.lightning and harness.lightning_available()
    chosen = {"plain", *settings.contenders} if settings.contenders else set(CONTENDERS)
    names = [n for n in CONTENDERS if n in chosen and (n != "lightning" or lightning)]
    on_gpu = device.startswith("cuda")
    rows: list[harness.Row] = []
    for model in settings.models or MODELS:

        def child(name: str, n: int, model: str = model) -> dict[str, Any]:
            argv = harness.module_argv(
                "device", name, "--model", model, "--device", device, "--iterations", n,
                "--epochs", epochs, "--threads", settings.threads, "--benchmark", benchmark,
            )  # fmt: skip
            return harness.run_child(argv, settings.threads)

        label = f"{benchmark} {device} {model}"
        targets = TARGETS[model] if on_gpu else {}
        if settings.lengths is not None and benchmark == "overhead":
            log(f"{label}: {settings.lengths[0]} and {settings.lengths[1]} it, {names}")
            children = {name: (lambda n, name=name: child(name, n)) for name in names}
            lines = two_lengths.measure(children, settings.lengths, settings.runs, log)
            rows += two_lengths.rows(label, lines, "plain", targets)
            rows += _bf16_rows(label, lines, "ms_per_iteration", "per iteration", "ms", on_gpu)
            continue
        log(f"{label}: {iterations} it x {epochs} epoch(s), {names}")
        contenders = {name: (lambda name=name: child(name, iterations)) for name in names}
        results = harness.alternate(contenders, settings.runs, log)
        timed = harness.rows_for(label, results, "seconds", "time", "s", "plain", targets)
        for row in timed:
            accuracy = harness.median([r["accuracy"] for r in results[row.contender]])
            notes = [] if math.isnan(accuracy) else [f"acc {accuracy:.2f}%"]  # overhead: none
            if row.contender == "lightning":
                notes.append("informational")
            if not on_gpu:
                notes.append("not a GPU: no CUDA graphs, no GPU targets")
            row.note = "; ".join(notes)
        rows += timed + _bf16_rows(label, results, "seconds", "time", "s", on_gpu)
    return rows


def _bf16_rows(label, results, key, measure, unit, on_gpu: bool) -> list[harness.Row]:
    """learner-bf16 against its peer, the plain loop under the same autocast."""
    pair = {name: results[name] for name in ("plain-bf16", "learner-bf16") if name in results}
    if len(pair) < 2:
        return []
    rows = harness.rows_for(
        label, pair, key, f"{measure} vs plain-bf16", unit, "plain-bf16",
        BF16_TARGET if on_gpu else {},
    )  # fmt: skip
    return [row for row in rows if row.contender == "learner-bf16"]


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
    """Batches sliced from tensors already on the device, in a fixed shuffled order; with
    `batches` more than the data holds, the same batches again, in the same order."""

    def __init__(
        self, images, targets, batch_size: int, shuffle: bool, batches: int | None = None
    ) -> None:
        import torch

        from examples.mnist.data import MnistBatch

        self.batch_type = MnistBatch
        self.images, self.targets, self.batch_size = images, targets, batch_size
        generator = torch.Generator().manual_seed(SEED)
        n = len(targets)
        order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
        self.order = order.to(images.device)
        self.distinct = -(-n // batch_size)
        self.batches = batches or self.distinct
        self.dataset = range(min(n, self.batches * batch_size))

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for i in range(self.batches):
            start = (i % self.distinct) * self.batch_size
            index = self.order[start : start + self.batch_size]
            targets = self.targets[index]  # a sequence's: every position's, flattened
            yield self.batch_type(
                self.images[index], targets.flatten() if targets.ndim > 1 else targets
            )


def data_for(name: str, device, iterations: int, batch: int | None = None):
    """(train batches, valid batches) on `device`: `iterations` train batches (of at most
    `DISTINCT[name]` distinct ones, then the same again), up to 8 valid, of `batch` examples
    (the model's benchmark batch size by default)."""
    import numpy as np
    import torch

    batch, valid_batches = batch or MODELS[name], min(8, max(2, iterations))
    distinct = min(iterations, DISTINCT[name] * MODELS[name] // batch)
    if name == "guide":
        from burnish.data.dataset.vision import MnistDataset

        from examples.mnist.data import MEAN, STD

        def tensors(dataset, n):
            images = torch.as_tensor(dataset.images[:n].copy()).float().div(255).sub(MEAN)
            return images.div(STD).to(device), torch.as_tensor(dataset.labels[:n]).to(device)

        train = tensors(MnistDataset.train(), distinct * batch)
        valid = tensors(MnistDataset.test(), valid_batches * batch)
    elif name == "gpt":
        from examples.language_model.data import Corpus

        length = gpt_config().context_length
        corpus = Corpus.stdlib(length, max_train_bytes=(distinct * batch + 1) * length)
        count = min(distinct * batch, len(corpus.train) // batch * batch)

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

        train, valid = tensors(distinct * batch), tensors(valid_batches * batch)
    return DeviceBatches(*train, batch, True, iterations), DeviceBatches(*valid, batch, False)


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
    start, cpu = time.perf_counter(), time.process_time()
    accuracy = function(model, train, valid, args.epochs, device, validate)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    result: dict[str, Any] = {"seconds": seconds, "accuracy": accuracy, "device": str(device)}
    result["cpu_seconds"] = cpu_seconds  # the host's work: what a launch-bound GPU step pays
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
    harness.report(result)


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks -b overhead --device cuda")
