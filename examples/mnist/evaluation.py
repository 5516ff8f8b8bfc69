"""Evaluate a trained model on the MNIST test set with the `Evaluator` (Burn main's
`EvaluatorBuilder`)."""

from __future__ import annotations

from pathlib import Path

import torch

from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset.vision import MnistDataset
from burnish.record import CompactRecorder
from burnish.train import EvaluationResult, EvaluatorBuilder
from burnish.train.metric import AccuracyMetric, LossMetric

from examples.mnist.data import MnistBatcher
from examples.mnist.training import TrainingConfig, limited


def evaluate(
    artifact_dir: str | Path, device: torch.device | str, limit: int | None = None
) -> EvaluationResult:
    """The test-set metrics of the model saved in `artifact_dir`; logs in `test/mnist-test/`.

    Args:
        limit: evaluate only the first `limit` test images; None for all 10,000.
    """
    config = TrainingConfig.load(f"{artifact_dir}/config.json")
    model = config.model.init(device).load_file(f"{artifact_dir}/model", CompactRecorder(), device)
    dataloader_test = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(config.batch_size)
        .num_workers(config.num_workers)
        .build(limited(MnistDataset.test(), limit))
    )
    evaluator = EvaluatorBuilder(artifact_dir).metrics(AccuracyMetric(), LossMetric()).build(model)
    result = evaluator.eval("mnist-test", dataloader_test)
    print(f"Test accuracy (evaluator): {result.metrics['Accuracy']:.2f}% on {result.items} images")
    return result
