"""A `Dataset` written the way a Burn user writes one: Burn's `get` and `len`, no dunders.

Burn (crates/burn-dataset/src/dataset/base.rs, the book's "Custom dataset"):

    struct MnistSubset { dataset: MnistDataset, size: usize }

    impl Dataset<MnistItem> for MnistSubset {
        fn get(&self, index: usize) -> Option<MnistItem> {
            if index < self.size { self.dataset.get(index) } else { None }
        }
        fn len(&self) -> usize { self.size }
    }

ported name by name below; it must work wherever a Dataset goes (issue 39, item 9).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import (
    Dataset,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    ShuffledDataset,
)
from burnish.data.dataset.vision import MnistItem
from burnish.optim import SgdConfig
from burnish.train import LearnerBuilder
from burnish.train.metric import LossMetric

from tests.helpers import MnistBatcher, iteration_lines, mnist
from tests.train.helpers import Mlp


class MnistSubset(Dataset[MnistItem]):
    """Burn's idiom: `get` and `len`, nothing else."""

    def __init__(self, dataset, size: int) -> None:
        self.dataset = dataset
        self.size = size

    def get(self, index: int) -> MnistItem | None:
        if index < self.size:
            return self.dataset.get(index)
        return None

    def len(self) -> int:
        return self.size


class PythonSquares(Dataset[int]):
    """The Python idiom: `__getitem__` and `__len__` only."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __getitem__(self, index: int) -> int:
        if not -self.size <= index < self.size:
            raise IndexError(index)
        return (index % self.size) ** 2

    def __len__(self) -> int:
        return self.size


def test_burn_get_and_len_give_every_dataset_method():
    source = mnist("test")
    dataset = MnistSubset(source, 5)
    assert len(dataset) == dataset.len() == 5
    assert dataset.get(5) is None
    assert dataset[4].label == source.get(4).label
    assert dataset[-1].label == source.get(4).label
    with pytest.raises(IndexError, match=r"index 5 for a dataset of 5 items"):
        dataset[5]
    assert [item.label for item in dataset.iter()] == [source.get(i).label for i in range(5)]
    assert [item.label for item in dataset.get_many([3, 0])] == [
        source.get(3).label,
        source.get(0).label,
    ]
    assert not dataset.is_empty()
    assert repr(dataset) == "MnistSubset(len=5)"


def test_burn_dataset_inside_the_wrappers():
    dataset = MnistSubset(mnist("test"), 10)
    labels = [dataset.get(i).label for i in range(10)]
    assert len(PartialDataset(dataset, 2, 6)) == 4
    assert PartialDataset(dataset, 2, 6).get(0).label == labels[2]
    shuffled = ShuffledDataset(dataset, 7)
    assert sorted(item.label for item in shuffled) == sorted(labels)
    mapped = MapperDataset(dataset, lambda item: item.label)
    assert [mapped.get(i) for i in range(10)] == labels
    assert InMemDataset.from_dataset(dataset).len() == 10


def test_burn_dataset_in_the_data_loader():
    dataset = MnistSubset(mnist("train"), 100)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(32).shuffle(1).build(dataset)
    assert len(loader) == 4 and loader.num_items() == 100
    targets = torch.cat([batch.targets for batch in loader.iter()])
    expected = sorted(dataset.get(i).label for i in range(100))
    assert sorted(targets.tolist()) == expected


def test_burn_dataset_trains_with_the_learner(tmp_path):
    bn.seed(0)
    train = MnistSubset(mnist("train"), 128)
    valid = MnistSubset(mnist("test"), 64)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(32)
    model = Mlp()
    before = model.linear2.weight.detach().clone()
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .num_epochs(1)
        .build(model, SgdConfig().init(), 0.1)
    )
    result = learner.fit(loader.shuffle(3).build(train), loader.build(valid))
    assert not torch.equal(result.model.linear2.weight.detach(), before)
    assert (tmp_path / "train" / "epoch-1" / "Loss.log").is_file()
    assert len(iteration_lines(tmp_path / "valid" / "epoch-1" / "Loss.log")) == 2


def test_python_dunders_keep_working():
    dataset = PythonSquares(4)
    assert len(dataset) == dataset.len() == 4
    assert dataset.get(3) == 9 and dataset.get(4) is None and dataset.get(-1) is None
    assert dataset[-1] == 9
    assert list(dataset) == [0, 1, 4, 9]
    assert dataset.get_many(np.array([2, 2])) == [4, 4]
    batches = DataLoaderBuilder(_IntBatcher()).batch_size(3).build(dataset)
    assert [batch.tolist() for batch in batches] == [[0, 1, 4], [9]]


class _IntBatcher(Batcher):
    def batch(self, items, device):
        return torch.tensor(items, device=device)


def test_mixed_spellings_work():
    class GetAndDunderLen(Dataset[int]):
        def get(self, index):
            return index if 0 <= index < 2 else None

        def __len__(self):
            return 2

    class DunderGetAndLen(Dataset[int]):
        def __getitem__(self, index):
            return [5, 6][index]

        def len(self):
            return 2

    assert list(GetAndDunderLen()) == [0, 1] and GetAndDunderLen().len() == 2
    assert list(DunderGetAndLen()) == [5, 6] and len(DunderGetAndLen()) == 2


def test_neither_spelling_names_what_to_define():
    class NoItems(Dataset[int]):
        def len(self):
            return 1

    class NoLen(Dataset[int]):
        def get(self, index):
            return None

    class Nothing(Dataset[int]):
        pass

    with pytest.raises(TypeError, match=r"NoItems: it defines neither `get` nor `__getitem__`\."):
        NoItems()
    with pytest.raises(TypeError, match=r"NoLen: it defines neither `len` nor `__len__`\."):
        NoLen()
    with pytest.raises(
        TypeError,
        match=r"Nothing: it defines neither `get` nor `__getitem__` and neither `len` nor "
        r"`__len__`\. A Dataset defines `get\(index\)` and `len\(\)`",
    ):
        Nothing()
    with pytest.raises(TypeError, match=r"abstract Dataset class Dataset"):
        Dataset()
