"""Fixtures of the export tests: the Burn book's guide model trained one short epoch on real
MNIST (the guide's own `train`), shared read-only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from burnish.data.dataloader import DataLoader
from burnish.record import CompactRecorder
from burnish.train import TrainingResult

from examples.mnist.export import model, valid_loader
from examples.mnist.model import Model
from examples.mnist.training import guide_config, train


@pytest.fixture(scope="session")
def guide_result(tmp_path_factory) -> TrainingResult:
    """A finished guide run: 1 epoch on 640 MNIST images, config.json, checkpoint/epoch-1 and
    model.mpk (~3 s). Read only."""
    directory = tmp_path_factory.mktemp("export") / "mnist"
    config = guide_config().with_num_epochs(1).with_num_workers(0)
    return train(directory, config, "cpu", limit=640)


@pytest.fixture
def guide_run(guide_result: TrainingResult) -> Path:
    """The run's artifact directory. Read only."""
    assert guide_result.artifact_dir is not None
    return Path(guide_result.artifact_dir)


@pytest.fixture
def trained(guide_run: Path) -> Model:
    """The run's trained model, loaded from its model.mpk (in training mode, as loaded)."""
    return model(guide_run).load_file(guide_run / "model", CompactRecorder(), torch.device("cpu"))


@pytest.fixture
def loader(guide_run: Path) -> DataLoader:
    """The run's validation loader (MNIST test images, batches of 64)."""
    return valid_loader(guide_run)
