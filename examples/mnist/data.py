"""MNIST batches for the guide: `MnistBatch` and the `MnistBatcher` that builds them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from burnish.data.dataloader import Batcher
from burnish.data.dataset.vision import MnistItem

MEAN, STD = 0.1307, 0.3081  # of MNIST's training pixels scaled to [0, 1]


@dataclass
class MnistBatch:
    images: torch.Tensor  # [B, 28, 28] float32, normalised
    targets: torch.Tensor  # [B] int64


class MnistBatcher(Batcher[MnistItem, MnistBatch]):
    def batch(self, items: list[MnistItem], device: torch.device) -> MnistBatch:
        images = np.stack([item.image for item in items])
        labels = np.array([item.label for item in items], dtype=np.int64)
        return self.batch_stacked(MnistItem(images, labels), device)

    def batch_stacked(self, items: MnistItem, device: torch.device) -> MnistBatch:
        # Fast path: the loader hands over the whole batch, gathered in one indexing.
        # Normalised in NumPy: on such small arrays torch's thread pool costs more than the work.
        images = (items.image / 255 - MEAN) / STD
        return MnistBatch(
            torch.from_numpy(images).to(device), torch.from_numpy(items.label).to(device)
        )
