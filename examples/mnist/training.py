"""Train the guide model on MNIST with the Learner (the Burn book's `training.rs`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.data.dataset.vision import MnistDataset
from burnish.optim import AdamConfig
from burnish.record import CompactRecorder
from burnish.train import LearnerBuilder, TrainingResult
from burnish.train.metric import AccuracyMetric, LossMetric

from examples.mnist.data import MnistBatcher
from examples.mnist.model import ModelConfig


@bn.config
class TrainingConfig:
    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 1.0e-4


def guide_config() -> TrainingConfig:
    """The guide's default: `TrainingConfig(ModelConfig(10, 512), AdamConfig())`."""
    return TrainingConfig(ModelConfig(num_classes=10, hidden_size=512), AdamConfig())


def main_process() -> bool:
    """Rank 0 under torchrun (the process that writes the run's files), or the only process."""
    return os.environ.get("RANK", "0") == "0"


def create_artifact_dir(artifact_dir: str | Path) -> None:
    """Remove existing artifacts so the learner summary is accurate."""
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True)


def limited(dataset, limit: int | None):
    return dataset if not limit else PartialDataset(dataset, 0, min(limit, len(dataset)))


def train(
    artifact_dir: str | Path,
    config: TrainingConfig,
    device: torch.device | str,
    limit: int | None = None,
    resume: bool = False,
) -> TrainingResult:
    """Train, save `config.json`, checkpoints and `model.mpk` into `artifact_dir`.

    Args:
        limit: use only the first `limit` items of each split (quick runs); None for all.
        resume: continue the run in `artifact_dir` from its last checkpoint (exactly where it
            stopped) instead of starting afresh in an emptied directory.
    """
    if main_process():  # under torchrun, the other ranks write no file of the run
        if not resume:
            create_artifact_dir(artifact_dir)
        config.save(f"{artifact_dir}/config.json")
    bn.seed(config.seed)

    batcher = MnistBatcher()
    dataloader_train = (
        DataLoaderBuilder(batcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.num_workers)
        .build(limited(MnistDataset.train(), limit))
    )
    dataloader_test = (
        DataLoaderBuilder(batcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(config.num_workers)
        .build(limited(MnistDataset.test(), limit))
    )

    builder = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .devices([device])
        .num_epochs(config.num_epochs)
        .summary()
    )
    if resume:
        builder = builder.resume()
    learner = builder.build(
        config.model.init(device), config.optimizer.init(), config.learning_rate
    )
    result = learner.fit(dataloader_train, dataloader_test)
    if main_process() and not result.interrupted:  # Ctrl-C: no half-trained model.mpk
        result.model.save_file(f"{artifact_dir}/model", CompactRecorder())
    if torch.distributed.is_initialized():  # the Learner joined torchrun's group
        torch.distributed.barrier()  # every rank evaluates the model rank 0 has just saved
    return result
