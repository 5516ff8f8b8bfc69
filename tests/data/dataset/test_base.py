import numpy as np
import pytest

from burnish.data.dataset import Dataset, InMemDataset


class Squares(Dataset[int]):
    def __init__(self, size: int) -> None:
        self.size = size

    def get(self, index: int) -> int | None:
        return index * index if 0 <= index < self.size else None

    def __len__(self) -> int:
        return self.size


def test_get_out_of_range_is_none_like_burn():
    dataset = Squares(4)
    assert dataset.get(3) == 9
    assert dataset.get(4) is None
    assert dataset.get(-1) is None


def test_getitem_is_pythonic():
    dataset = Squares(4)
    assert dataset[2] == 4
    assert dataset[-1] == 9
    assert dataset[np.int64(1)] == 1
    with pytest.raises(IndexError, match=r"index 4 for a dataset of 4 items"):
        dataset[4]
    with pytest.raises(IndexError, match=r"index -5"):
        dataset[-5]
    with pytest.raises(TypeError, match=r"indices must be integers.*slice"):
        dataset[1:2]


def test_getitem_in_range_returns_a_none_item():
    dataset = InMemDataset([None, 1])
    assert dataset[0] is None and dataset[-2] is None and dataset[1] == 1
    with pytest.raises(IndexError, match=r"index 2 for a dataset of 2 items"):
        dataset[2]


def test_len_iter_and_burn_spellings():
    dataset = Squares(3)
    assert len(dataset) == dataset.len() == 3
    assert list(dataset) == list(dataset.iter()) == [0, 1, 4]
    assert not dataset.is_empty()
    assert Squares(0).is_empty()
    assert repr(dataset) == "Squares(len=3)"


def test_get_stacked_defaults_to_unsupported():
    assert Squares(3).get_stacked(np.array([0, 1])) is None


def test_abstract_methods_are_required():
    with pytest.raises(TypeError, match=r"abstract"):
        Dataset()


def test_in_memory_dataset():
    dataset = InMemDataset(["a", "b"])
    assert dataset.get(1) == "b"
    assert dataset.get(2) is None
    assert InMemDataset.from_dataset(Squares(3)).items == [0, 1, 4]
