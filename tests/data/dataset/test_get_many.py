"""`Dataset.get_many` (Burn main): order, repeats, bounds, transforms and the loader."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import (
    Dataset,
    InMemDataset,
    PartialDataset,
    SelectionDataset,
    ShuffledDataset,
)


class Counting(Dataset[int]):
    """Items `10 * i`; records every `get` and `get_many` call."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.gets: list[int] = []
        self.many_calls: list[list[int]] = []

    def get(self, index: int) -> int | None:
        self.gets.append(index)
        return 10 * index if 0 <= index < self.size else None

    def __len__(self) -> int:
        return self.size

    def get_many(self, indices):
        indices = [int(i) for i in indices]
        self.many_calls.append(indices)
        return super().get_many(indices)


def test_get_many_follows_the_order_with_repeats_like_burn():
    dataset = InMemDataset(["a", "b", "c"])
    assert dataset.get_many([1, 0, 1]) == ["b", "a", "b"]
    assert dataset.get_many([]) == []
    assert dataset.get_many(np.array([2, 2])) == ["c", "c"]


def test_get_many_out_of_bounds_raises_like_burns_panic():
    dataset = InMemDataset([1, 2])
    with pytest.raises(IndexError, match=r"Index out of bounds for InMemDataset: index 10 is "):
        dataset.get_many([0, 10])
    with pytest.raises(IndexError, match=r"index -1 is not in \[0, 2\)"):
        dataset.get_many([-1])
    with pytest.raises(TypeError, match=r"integer indices. Received: 0.5"):
        dataset.get_many([0.5])


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(0, 30),
    data=st.data(),
)
def test_get_many_equals_get_per_index(size, data):
    dataset = InMemDataset(list(range(100, 100 + size)))
    indices = data.draw(st.lists(st.integers(-5, size + 5), max_size=40))
    if all(0 <= i < size for i in indices):
        assert dataset.get_many(indices) == [dataset.get(i) for i in indices]
    else:
        with pytest.raises(IndexError, match="Index out of bounds"):
            dataset.get_many(indices)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 25), data=st.data())
def test_transforms_forward_one_get_many_to_their_source(size, data):
    source = Counting(size)
    start = data.draw(st.integers(0, size - 1))
    partial = PartialDataset(source, start, size)
    selection = SelectionDataset(source, data.draw(st.permutations(range(size))))
    shuffled = ShuffledDataset(source, data.draw(st.integers(0, 2**32 - 1)))
    for dataset in (partial, selection, shuffled):
        indices = data.draw(st.lists(st.integers(0, len(dataset) - 1), max_size=10))
        source.many_calls.clear()
        items = dataset.get_many(indices)
        assert items == [dataset.get(i) for i in indices]
        assert len(source.many_calls) == 1  # one call on the source, not one per item
    with pytest.raises(IndexError, match="PartialDataset"):
        partial.get_many([len(partial)])


class ListBatcher(Batcher):
    def batch(self, items, device):
        return torch.tensor(items, device=device)


def test_the_loader_fetches_each_batch_with_one_get_many_like_burn():
    dataset = Counting(7)
    loader = DataLoaderBuilder(ListBatcher()).batch_size(3).build(dataset)
    batches = [batch.tolist() for batch in loader.iter()]
    assert batches == [[0, 10, 20], [30, 40, 50], [60]]
    assert dataset.many_calls == [[0, 1, 2], [3, 4, 5], [6]]


def test_the_loader_still_reads_a_duck_typed_dataset_with_get():
    class Plain:  # no get_many: not a burnish Dataset
        def get(self, index):
            return index

        def __len__(self):
            return 4

    loader = DataLoaderBuilder(ListBatcher()).batch_size(4).build(Plain())
    assert [batch.tolist() for batch in loader.iter()] == [[0, 1, 2, 3]]
