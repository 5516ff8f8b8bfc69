"""`SelectionDataset`: a view of chosen indices of another dataset (Burn: `SelectionDataset`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic

import numpy as np

from burnish.data.dataset.base import Dataset, I, check_indices

__all__ = ["RngSource", "SelectionDataset", "make_rng"]

RngSource = int | np.random.Generator | None
"""A seed (`int`), a NumPy `Generator` (advanced in place), or `None` for OS entropy."""


def make_rng(source: RngSource) -> np.random.Generator:
    """A NumPy generator from a seed, a generator (returned as is) or `None` (OS entropy).

    Raises:
        ValueError: if the seed is a negative integer or not an integer.
    """
    if isinstance(source, np.random.Generator):
        return source
    if source is not None and (
        isinstance(source, bool) or not isinstance(source, int | np.integer) or source < 0
    ):
        raise ValueError(
            f"A seed must be a non-negative integer, a numpy Generator or None. "
            f"Received: {source!r}."
        )
    return np.random.default_rng(source)


class SelectionDataset(Dataset[I], Generic[I]):
    """Item `i` is `dataset[indices[i]]`; indices may repeat or be left out.

    Args:
        dataset: the source dataset.
        indices: indices into `dataset`.

    Raises:
        IndexError: if an index is outside `[0, len(dataset))`.

    Example:
        >>> list(SelectionDataset(InMemDataset("abcd"), [3, 0, 0]))
        ['d', 'a', 'a']
    """

    def __init__(self, dataset: Dataset[I], indices: Sequence[int] | np.ndarray) -> None:
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        bad = (self.indices < 0) | (self.indices >= len(dataset))
        if bad.any():
            raise IndexError(
                f"Selection index out of bounds: {int(self.indices[bad][0])} for a dataset of "
                f"{len(dataset)} items. Use indices in [0, {len(dataset)})."
            )

    @classmethod
    def from_indices_checked(
        cls, dataset: Dataset[I], indices: Sequence[int] | np.ndarray
    ) -> SelectionDataset[I]:
        """Select `indices`, checking each is valid (the constructor does the same)."""
        return cls(dataset, indices)

    @classmethod
    def from_indices_unchecked(
        cls, dataset: Dataset[I], indices: Sequence[int] | np.ndarray
    ) -> SelectionDataset[I]:
        """Select `indices` without checking them; an invalid index later gives `None`."""
        selection = cls.__new__(cls)
        selection.dataset = dataset
        selection.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        return selection

    @classmethod
    def new_select_all(cls, dataset: Dataset[I]) -> SelectionDataset[I]:
        """Select every item, in order."""
        return cls.from_indices_unchecked(dataset, np.arange(len(dataset), dtype=np.int64))

    @classmethod
    def new_shuffled(cls, dataset: Dataset[I], rng: RngSource) -> SelectionDataset[I]:
        """Select every item in a random order drawn from `rng` (see `RngSource`)."""
        selection = cls.new_select_all(dataset)
        selection.shuffle(rng)
        return selection

    def shuffle(self, rng: RngSource) -> None:
        """Shuffle the selected indices in place with `rng` (see `RngSource`)."""
        self.indices = make_rng(rng).permutation(self.indices)

    def slice(self, start: int, end: int) -> SelectionDataset[I]:
        """The selection of `indices[start:end]`, over the same source dataset."""
        return type(self).from_indices_unchecked(self.dataset, self.indices[start:end].copy())

    def split(self, num: int) -> list[SelectionDataset[I]]:
        """Split into `num` consecutive parts of `len(self) // num` indices; the last part takes
        the remainder (Burn: `SelectionDataset::split`).

        Raises:
            ValueError: if `num < 1`.
        """
        if num < 1:
            raise ValueError(f"`num` (the number of parts) must be >= 1. Received: num={num}.")
        size = len(self) // num
        bounds = [i * size for i in range(num)] + [len(self)]
        return [self.slice(bounds[i], bounds[i + 1]) for i in range(num)]

    def get(self, index: int) -> I | None:
        """The source's item at `indices[index]`, or `None` if `index` is out of range."""
        if not 0 <= index < len(self.indices):
            return None
        return self.dataset.get(int(self.indices[index]))

    def __len__(self) -> int:
        return len(self.indices)

    def get_many(self, indices: Iterable[int]) -> list[I]:
        """The source's items at `self.indices[i]`, fetched in one `get_many` of the source.

        Raises:
            IndexError: if an index is not in `[0, len(self))`.
        """
        positions = np.asarray(check_indices(self, indices), dtype=np.int64)
        return self.dataset.get_many(self.indices[positions].tolist())

    def get_stacked(self, indices: np.ndarray) -> I | None:
        """The source's stacked items at `self.indices[indices]` (see `Dataset.get_stacked`)."""
        return self.dataset.get_stacked(self.indices[indices])
