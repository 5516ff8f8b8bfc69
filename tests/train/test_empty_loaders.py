"""A data loader without batches fails before training (by its `len()`), or at its first
epoch's end when its `len()` was not true, naming the loader: train, valid, or the
evaluator's test loader. Never `Accuracy nan | Loss nan` and exit 0."""

from __future__ import annotations

import io

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.optim import AdamConfig
from burnish.train import EvaluatorBuilder
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import MnistBatcher, mnist
from tests.train.helpers import Mlp, builder, loaders


def empty_burnish_loader():
    return (
        DataLoaderBuilder(MnistBatcher()).batch_size(64).build(PartialDataset(mnist("test"), 0, 0))
    )


class Lying(IterableDataset):
    """Says it has 3 items and yields none (e.g. a sharded stream whose share ran dry)."""

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 3


def learner(tmp_path):
    bn.seed(1)
    return builder(tmp_path, epochs=2).build(Mlp(), AdamConfig().init(), 1e-3)


EMPTY_BEFORE_TRAINING = {
    "burnish": empty_burnish_loader,
    "torch": lambda: DataLoader(TensorDataset(torch.zeros(0, 784)), batch_size=8),
    "torch-drop-last": lambda: DataLoader(
        TensorDataset(torch.zeros(5, 784)), batch_size=8, drop_last=True
    ),
    "iterable": lambda: [],
}


@pytest.mark.parametrize("kind", EMPTY_BEFORE_TRAINING)
@pytest.mark.parametrize("split", ["train", "valid"])
def test_an_empty_loader_fails_before_anything_is_written(tmp_path, kind, split):
    train, valid = loaders()
    empty = EMPTY_BEFORE_TRAINING[kind]()
    fitted = learner(tmp_path / "run")
    with pytest.raises(ValueError) as raised:
        fitted.fit(empty, valid) if split == "train" else fitted.fit(train, empty)
    message = str(raised.value)
    assert f"The {split} data loader (`dataloader_{split}`) yields no batches" in message
    assert "len(loader) is 0" in message and type(empty).__name__ in message
    if split == "valid":
        assert (
            "to train without validation, leave it out: `learner.fit(dataloader_train)`" in message
        )
    assert not (tmp_path / "run").exists()  # nothing written, nothing trained
    if kind == "burnish" and split == "train":  # the learner was not consumed: it trains
        result = fitted.fit(train, valid)
        assert result.epochs_completed == 2 and result.iterations == 20


@pytest.mark.parametrize("split", ["train", "valid"])
def test_a_loader_whose_len_is_not_true_fails_at_its_first_epochs_end(tmp_path, split):
    train, valid = loaders()
    lying = DataLoader(Lying(), batch_size=None)
    fitted = learner(tmp_path)
    with pytest.raises(ValueError) as raised:
        fitted.fit(lying, valid) if split == "train" else fitted.fit(train, lying)
    message = str(raised.value)
    assert f"The {split} data loader (`dataloader_{split}`) yields no batches" in message
    assert "an epoch drew none although len(loader) is 3" in message


def evaluator(directory):
    return (
        EvaluatorBuilder(directory)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .build(Mlp())
    )


@pytest.mark.parametrize(
    "loader, said",
    [
        (empty_burnish_loader, "len(loader) is 0"),
        (lambda: DataLoader(Lying(), batch_size=None), "drew none although len(loader) is 3"),
    ],
    ids=["burnish", "lying-iterable"],
)
def test_the_evaluator_names_its_empty_test_loader(tmp_path, loader, said):
    test = (
        DataLoaderBuilder(MnistBatcher()).batch_size(64).build(PartialDataset(mnist("test"), 0, 64))
    )
    with pytest.raises(ValueError) as raised:
        evaluator(tmp_path).eval_all([("mnist-test", test), ("held-out", loader())])
    message = str(raised.value)
    assert "The test data loader 'held-out' yields no batches" in message and said in message
    assert "leave that (name, data loader) pair out" in message
