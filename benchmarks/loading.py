"""MNIST loader throughput vs `torch.utils.data.DataLoader`, and vs training speed.

Contenders, each one full shuffled epoch of the 60,000 training images in batches of 64, in a
fresh process, with 0 and 2 workers:

  burnish   `DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(w)`
            (`benchmarks/loader_vs_training.py`'s `time_loader_epoch`): uint8 images gathered per
            batch and normalised to float32 in the batcher.
  torch     `torch.utils.data.DataLoader(TensorDataset(images, labels), batch_size=64,
            shuffle=True, num_workers=w)` over the same images already normalised to float32
            once up front (so it does strictly less work per batch than burnish).
  training  the guide model (hidden 512, Adam, batch 64) training on in-memory batches
            (`loader_vs_training.time_training`), as samples per second: the rate a loader
            must beat.

Targets: burnish / torch >= 1.0 for each worker count; burnish / training >= 10.
"""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks import harness

WORKERS = (0, 2)
BATCH = 64


def run(settings: harness.Settings, log) -> list[harness.Row]:
    train_batches = 30 if settings.quick else 100
    contenders = {}
    for workers in WORKERS:
        for kind in ("burnish", "torch"):
            argv = harness.module_argv(
                "loading", kind, "--workers", workers, "--threads", settings.threads
            )
            contenders[f"{kind} w={workers}"] = lambda argv=argv: harness.run_child(
                argv, settings.threads
            )
    contenders["training"] = lambda: harness.run_child(
        harness.module_argv(
            "loading", "training", "--batches", train_batches, "--threads", settings.threads
        ),
        settings.threads,
    )
    log(f"loading: {settings.runs} runs")
    results = harness.alternate(contenders, settings.runs, log)
    rows = []
    training = harness.median([r["samples_per_s"] for r in results["training"]])
    for workers in WORKERS:
        pair = {k: results[f"{k} w={workers}"] for k in ("burnish", "torch")}
        label = f"loading w={workers}"
        rows += harness.rows_for(
            label,
            pair,
            "samples_per_s",
            "throughput",
            "samples/s",
            "torch",
            {"burnish": harness.at_least(1.0)},
        )
        burnish = rows[-2]
        ok = burnish.median >= 10 * training
        burnish.note = f"{burnish.median / training:.0f}x training rate (target >= 10x)"
        burnish.ok = bool(burnish.ok and ok)
    rows += harness.rows_for(
        "loading",
        {"training": results["training"]},
        "samples_per_s",
        "training rate",
        "samples/s",
        None,
    )
    rows[-1].note = "guide model (hidden 512), batch 64"
    return rows


def _torch_epoch(workers: int) -> float:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from burnish.data.dataset.vision import MnistDataset

    from examples.mnist.data import MEAN, STD

    dataset = MnistDataset.train()
    images = (torch.as_tensor(dataset.images.copy()).float() / 255 - MEAN) / STD
    tensors = TensorDataset(images, torch.as_tensor(dataset.labels))
    generator = torch.Generator().manual_seed(42)
    loader = DataLoader(
        tensors, batch_size=BATCH, shuffle=True, num_workers=workers, generator=generator
    )
    start = time.perf_counter()
    for batch in loader:
        del batch
    return time.perf_counter() - start


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.loading child")
    parser.add_argument("kind", choices=("burnish", "torch", "training"))
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    import torch

    from benchmarks.loader_vs_training import time_loader_epoch, time_training
    from burnish.data.dataset.vision import MnistDataset

    if args.kind == "training":
        per_step = time_training(MnistDataset.train(), torch.device("cpu"), args.batches)
        harness.report({"samples_per_s": BATCH / per_step})
        return
    if args.kind == "burnish":
        dataset = MnistDataset.train()
        seconds = time_loader_epoch(dataset, torch.device("cpu"), args.workers)
    else:
        seconds = _torch_epoch(args.workers)
    harness.report({"samples_per_s": 60_000 / seconds, "seconds": seconds})


if __name__ == "__main__":
    child(sys.argv[2:])
