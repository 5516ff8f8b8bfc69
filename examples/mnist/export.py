"""Export the guide's trained model for inference: ONNX (run by onnxruntime) or torch.export.

From the command line, these two callables tell `burnish export` how to build the model and
where its example input comes from:

    burnish export artifacts/mnist --to onnx --model examples.mnist.export:model \\
        --example examples.mnist.export:valid_loader --inputs images

In Python, `export_model` does the same with the run's validation loader.
"""

from __future__ import annotations

from pathlib import Path

import torch

from burnish.data.dataloader import DataLoader, DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.data.dataset.vision import MnistDataset
from burnish.export import ExportResult, export
from burnish.record import CompactRecorder

from examples.mnist.data import MnistBatcher
from examples.mnist.model import Model
from examples.mnist.training import TrainingConfig


def model(artifact_dir: str | Path) -> Model:
    """The untrained guide model the run's `config.json` describes."""
    return TrainingConfig.load(f"{artifact_dir}/config.json").model.init("cpu")


def valid_loader(artifact_dir: str | Path) -> DataLoader:
    """The run's validation loader (MNIST's test split, the run's batch size), first batch only
    needed: 1,000 items."""
    config = TrainingConfig.load(f"{artifact_dir}/config.json")
    return (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(config.batch_size)
        .build(PartialDataset(MnistDataset.test(), 0, 1_000))
    )


def export_model(artifact_dir: str | Path, to: str = "onnx") -> ExportResult:
    """Load `artifact_dir/model.mpk` into the guide model and export it beside the record."""
    trained = model(artifact_dir).load_file(
        f"{artifact_dir}/model", CompactRecorder(), torch.device("cpu")
    )
    return export(trained, valid_loader(artifact_dir), f"{artifact_dir}/model", to, inputs="images")
