"""`ShuffledDataset`: a fixed random permutation of another dataset (Burn: `ShuffledDataset`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic

import numpy as np

from burnish.data.dataset.base import Dataset, I
from burnish.data.dataset.transform.selection import RngSource, SelectionDataset

__all__ = ["ShuffledDataset"]


class ShuffledDataset(Dataset[I], Generic[I]):
    """The items of `dataset` in a random order, drawn once at construction.

    The same integer seed gives the same order on every run and machine
    (`numpy.random.default_rng(seed).permutation(len(dataset))`).

    Args:
        dataset: the source dataset.
        seed: an `int` seed, a NumPy `Generator` (advanced), or `None` for OS entropy.
    """

    def __init__(self, dataset: Dataset[I], seed: RngSource) -> None:
        self._selection = SelectionDataset.new_shuffled(dataset, seed)

    @property
    def dataset(self) -> Dataset[I]:
        """The source dataset."""
        return self._selection.dataset

    @property
    def indices(self) -> np.ndarray:
        """The permutation: item `i` is `dataset[indices[i]]`."""
        return self._selection.indices

    def get(self, index: int) -> I | None:
        """The item at position `index` of the shuffled order, or `None` if out of range."""
        return self._selection.get(index)

    def __len__(self) -> int:
        return len(self._selection)

    def get_many(self, indices: Iterable[int]) -> list[I]:
        """The items at positions `indices` of the shuffled order, in one source `get_many`."""
        return self._selection.get_many(indices)

    def get_stacked(self, indices: np.ndarray) -> I | None:
        """The stacked items at positions `indices` of the shuffled order."""
        return self._selection.get_stacked(indices)
