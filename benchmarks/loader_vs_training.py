"""Is the data loader ever the bottleneck? One MNIST epoch of loading vs one epoch of training.

Measures, on the device given (default CPU):
  1. `MnistDataset.train()` load time (decompress, sha256-verify, parse);
  2. one full train epoch (938 batches of 64) through `DataLoader` + `MnistBatcher`, with 0 and
     2 workers, touching every batch (no training);
  3. the guide model (conv 1->8 k3, conv 8->16 k3, adaptive avg pool 8x8, dropout, linear
     1024->512->10, ReLU; Adam, batch 64) trained on `--train-batches` batches, extrapolated to
     an epoch.

Run from the repository root:
    .venv/bin/python -m benchmarks.loader_vs_training [--device cuda] [--train-batches 100]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset.vision import MnistDataset

from examples.mnist.data import MnistBatcher


class GuideModel(nn.Module):
    """The Burn book's MNIST model, in plain PyTorch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(0.5)
        self.linear1 = nn.Linear(16 * 8 * 8, 512)
        self.linear2 = nn.Linear(512, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.dropout(self.conv1(images.unsqueeze(1)))
        x = torch.relu(self.dropout(self.conv2(x)))
        x = self.pool(x).flatten(1)
        return self.linear2(torch.relu(self.dropout(self.linear1(x))))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_loader_epoch(dataset: MnistDataset, device: torch.device, workers: int) -> float:
    loader = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(64)
        .shuffle(42)
        .num_workers(workers)
        .set_device(device)
        .build(dataset)
    )
    start = time.perf_counter()
    for batch in loader:
        del batch
    sync(device)
    return time.perf_counter() - start


def time_training(dataset: MnistDataset, device: torch.device, num_batches: int) -> float:
    """Seconds per training iteration (forward, backward, Adam step), data already on device."""
    bn.seed(0)
    model = GuideModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(0).set_device(device)
    batches = list(loader.build(dataset).slice(0, 64 * (num_batches + 5)))
    loss_fn = nn.CrossEntropyLoss()

    def step(batch) -> None:
        loss = loss_fn(model(batch.images), batch.targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for batch in batches[:5]:  # warm-up
        step(batch)
    sync(device)
    start = time.perf_counter()
    for batch in batches[5:]:
        step(batch)
    sync(device)
    return (time.perf_counter() - start) / num_batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--train-batches", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2, help="loader epochs timed per setting")
    args = parser.parse_args()
    device = bn.device(args.device)

    start = time.perf_counter()
    dataset = MnistDataset.train()
    print(f"MnistDataset.train() load: {time.perf_counter() - start:.3f} s")

    loader_times = {}
    for workers in (0, 2):
        runs = [time_loader_epoch(dataset, device, workers) for _ in range(args.repeats)]
        loader_times[workers] = min(runs)
        print(f"loader epoch, workers={workers}: " + ", ".join(f"{t:.3f} s" for t in runs))

    per_step = time_training(dataset, device, args.train_batches)
    epoch_s = per_step * 938
    print(
        f"training: {per_step * 1e3:.2f} ms/iteration over {args.train_batches} batches "
        f"-> {epoch_s:.1f} s per epoch (938 iterations)"
    )
    for workers, seconds in loader_times.items():
        print(f"workers={workers}: loading is {epoch_s / seconds:.0f}x faster than training")


if __name__ == "__main__":
    main()
