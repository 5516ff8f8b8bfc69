"""Burn's dataset transforms, checked against their Burn semantics on small datasets."""

import numpy as np
import pytest

from burnish.data.dataset import (
    ComposedDataset,
    InMemDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
)


def items(size):
    return InMemDataset([f"item-{i}" for i in range(size)])


class FirstChar(Mapper):
    def map(self, item):
        return item[0]


def test_mapper_dataset_with_mapper_and_callable():
    assert list(MapperDataset(InMemDataset(["ab", "cd"]), FirstChar())) == ["a", "c"]
    squares = MapperDataset(InMemDataset([1, 2, 3]), lambda x: x * x)
    assert list(squares) == [1, 4, 9]
    assert squares.get(3) is None
    assert squares.get_stacked(np.array([0])) is None
    with pytest.raises(TypeError, match=r"`mapper` must be a `Mapper` or a callable"):
        MapperDataset(InMemDataset([1]), 3)


def test_partial_dataset_ranges():
    partial = PartialDataset(items(27), 10, 20)
    assert len(partial) == 10
    assert list(partial) == [f"item-{i}" for i in range(10, 20)]
    assert partial.get(10) is None
    assert partial.get(-1) is None
    assert len(PartialDataset(items(5), 3, 100)) == 2  # clipped to the dataset like Burn
    with pytest.raises(ValueError, match=r"0 <= start_index <= end_index.*start_index=4"):
        PartialDataset(items(5), 4, 2)


def test_partial_split_like_burn():
    dataset = items(27)
    parts = PartialDataset.split(dataset, 4)
    assert [len(part) for part in parts] == [6, 6, 6, 9]
    assert [item for part in parts for item in part] == list(dataset)
    with pytest.raises(ValueError, match=r"must be >= 1. Received: num=0"):
        PartialDataset.split(dataset, 0)


def test_partial_split_chunks_like_burn():
    parts = PartialDataset.split_chunks(items(27), 4, 5)  # 6 batches over 4 parts: 2, 2, 1, 1
    assert [len(part) for part in parts] == [10, 10, 5, 2]
    assert [item for part in parts for item in part] == list(items(27))
    assert len(PartialDataset.split_chunks(items(3), 4, 2)) == 2  # empty parts left out


def test_shuffled_dataset_is_a_seeded_permutation():
    dataset = items(27)
    shuffled = ShuffledDataset(dataset, 42)
    expected = np.random.default_rng(42).permutation(27)
    np.testing.assert_array_equal(shuffled.indices, expected)
    assert list(shuffled) == [f"item-{i}" for i in expected]
    assert list(ShuffledDataset(dataset, 42)) == list(shuffled)
    assert list(ShuffledDataset(dataset, 43)) != list(shuffled)
    assert sorted(shuffled) == sorted(dataset)
    with pytest.raises(ValueError, match=r"seed must be a non-negative integer.*-1"):
        ShuffledDataset(dataset, -1)


def test_composed_dataset_concatenates():
    composed = ComposedDataset([items(10), InMemDataset(["x"]), InMemDataset([]), items(5)])
    assert len(composed) == 16
    assert list(composed) == [*items(10), "x", *items(5)]
    assert composed.get(10) == "x"
    assert composed.get(16) is None
    assert composed.get(-1) is None


def test_windows_dataset_matches_python_windows():
    values = [1, 2, 3, 4, 5]
    windows = WindowsDataset(InMemDataset(values), 3)
    assert list(windows) == [values[i : i + 3] for i in range(3)]
    assert len(WindowsDataset(InMemDataset(values), 6)) == 0
    assert windows.get(3) is None
    with pytest.raises(ValueError, match=r"Window `size` must be >= 1. Received: size=0"):
        WindowsDataset(InMemDataset(values), 0)


def test_selection_dataset():
    dataset = items(27)
    selection = SelectionDataset(dataset, [15, 1, 12, 12])
    assert list(selection) == ["item-15", "item-1", "item-12", "item-12"]
    assert selection.get(4) is None
    with pytest.raises(IndexError, match=r"300 for a dataset of 27 items"):
        SelectionDataset.from_indices_checked(dataset, [15, 300])
    unchecked = SelectionDataset.from_indices_unchecked(dataset, [300])
    assert unchecked.get(0) is None


def test_selection_shuffle_slice_split():
    dataset = items(28)
    everything = SelectionDataset.new_select_all(dataset)
    assert list(everything) == list(dataset)
    assert list(everything.slice(5, 15)) == list(dataset)[5:15]
    assert [list(part) for part in everything.split(3)] == [
        list(dataset)[0:9],
        list(dataset)[9:18],
        list(dataset)[18:28],
    ]
    shuffled = SelectionDataset.new_shuffled(dataset, 7)
    np.testing.assert_array_equal(shuffled.indices, np.random.default_rng(7).permutation(28))
    generator = np.random.default_rng(7)
    from_generator = SelectionDataset.new_shuffled(dataset, generator)
    np.testing.assert_array_equal(from_generator.indices, shuffled.indices)
    again = SelectionDataset.new_shuffled(dataset, generator)  # the generator moved on
    assert not np.array_equal(again.indices, shuffled.indices)


class Stacking(InMemDataset):
    """An in-memory dataset of ints that supports the stacked gather."""

    def get_stacked(self, indices):
        return np.asarray(self.items)[indices]


def test_index_transforms_pass_the_stacked_gather_through():
    source = Stacking(range(100, 110))
    indices = np.array([2, 0])
    np.testing.assert_array_equal(PartialDataset(source, 5, 9).get_stacked(indices), [107, 105])
    selection = SelectionDataset(source, [9, 8, 7])
    np.testing.assert_array_equal(selection.get_stacked(indices), [107, 109])
    shuffled = ShuffledDataset(source, 3)
    expected = [shuffled.get(2), shuffled.get(0)]
    np.testing.assert_array_equal(shuffled.get_stacked(indices), expected)
