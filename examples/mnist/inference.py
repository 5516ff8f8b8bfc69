"""Load a trained model from its artifact dir and classify one item (the Burn book's
`inference.rs`)."""

from __future__ import annotations

from pathlib import Path

import torch

from burnish.data.dataset.vision import MnistItem
from burnish.record import CompactRecorder

from examples.mnist.data import MnistBatcher
from examples.mnist.training import TrainingConfig


def infer(artifact_dir: str | Path, device: torch.device | str, item: MnistItem) -> int:
    """Predict the digit of `item` with the model saved in `artifact_dir`."""
    config = TrainingConfig.load(f"{artifact_dir}/config.json")
    model = config.model.init(device).load_file(f"{artifact_dir}/model", CompactRecorder(), device)
    label = item.label
    batch = MnistBatcher().batch([item], torch.device(device))
    # A built or loaded module is in training mode (dropout on), where Burn's inference backend
    # has no autodiff and no dropout: predict with the inference twin.
    output = model.valid().forward(batch.images)
    predicted = int(output.argmax(dim=1)[0])
    print(f"Predicted {predicted} Expected {label}")
    return predicted
