"""Shared test helpers: a seeded tiny model, tolerant comparisons, MNIST batches."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import Batcher
from burnish.data.dataset.vision import MnistDataset, MnistItem
from burnish.train.metric import LossMetric

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # of MNIST's training pixels scaled to [0, 1]


def mnist(split: str) -> MnistDataset:
    """`MnistDataset.new(split)`, read once per process and folder: decompressing and checking
    the files takes 0.15-0.3 s, and the suite's runs asked for them a thousand times. The
    dataset is read-only (its arrays view the file's bytes), so tests can share it. The fork
    server (tests/fork_server.py) reads both splits before it forks, for every run it starts.
    Tests of reading MNIST itself call `MnistDataset` directly."""
    return _mnist(split, os.environ.get("BURNISH_DATASETS"))


@functools.cache
def _mnist(split: str, datasets: str | None) -> MnistDataset:
    return MnistDataset.new(split)


def read_mnist() -> None:
    """Both splits into `mnist`'s cache (what the fork server calls before it forks)."""
    mnist("train")
    mnist("test")


def tiny_model(seed: int = 0, in_features: int = 4, hidden: int = 8, out: int = 3) -> nn.Module:
    """A small deterministic MLP (two linears with a ReLU)."""
    bn.seed(seed)
    return nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, out))


def assert_close(actual, expected, atol: float = 1e-6, rtol: float = 1e-6) -> None:
    """`torch.testing.assert_close` over tensors, or dicts/lists of them."""
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"keys differ: {set(actual) ^ set(expected)}"
        for key in expected:
            assert_close(actual[key], expected[key], atol, rtol)
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, atol, rtol)
    else:
        torch.testing.assert_close(
            torch.as_tensor(actual), torch.as_tensor(expected), atol=atol, rtol=rtol
        )


@dataclass
class MnistBatch:
    """Normalised images `[B, 28, 28]` float32 and their labels `[B]` int64."""

    images: torch.Tensor
    targets: torch.Tensor


class MnistBatcher(Batcher[MnistItem, MnistBatch]):
    """The tests' MNIST batcher: the guide's batches, kept apart from examples/."""

    def batch(self, items: list[MnistItem], device: torch.device) -> MnistBatch:
        images = np.stack([item.image for item in items])
        labels = np.array([item.label for item in items], dtype=np.int64)
        return self.batch_stacked(MnistItem(images, labels), device)

    def batch_stacked(self, items: MnistItem, device: torch.device) -> MnistBatch:
        images = (items.image / 255 - MNIST_MEAN) / MNIST_STD
        return MnistBatch(
            torch.from_numpy(images).to(device), torch.from_numpy(items.label).to(device)
        )


class LrSeen(LossMetric):
    """A loss metric that also keeps the learning rate each training iteration was given."""

    def __init__(self) -> None:
        super().__init__()
        self.name, self.lrs = "LrSeen", []

    def update(self, item, metadata):
        self.lrs.append(metadata.lr)
        return super().update(item, metadata)


def iteration_lines(path: str | os.PathLike) -> list[str]:
    """A metric log's iteration lines: its lines without the `value,final` line that ends an
    epoch's log (Burn main's format, which burnish writes)."""
    with open(path, encoding="utf-8") as file:
        return [line for line in file.read().splitlines() if not line.endswith(",final")]
