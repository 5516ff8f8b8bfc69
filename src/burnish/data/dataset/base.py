"""The `Dataset` base class (Burn's `Dataset` trait): a sized collection of items."""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

import numpy as np

__all__ = ["Dataset", "I", "O", "check_indices"]

I = TypeVar("I")  # noqa: E741 - Burn's name for the item type
O = TypeVar("O")  # noqa: E741 - Burn's name for an output item type


class Dataset(ABC, Generic[I]):
    """A sized, indexable collection of items (Burn: `Dataset<I>`).

    Subclasses implement `get` and `__len__`. Indexing follows Burn for `get` (an index outside
    `[0, len)` gives `None`) and Python for `dataset[i]` (negative indices count from the end; an
    index out of range raises `IndexError`).

    Datasets that hold their items as arrays may also implement `get_stacked`, the loader's fast
    path: see `burnish.data.dataloader.Batcher`.

    Example:
        >>> dataset = InMemDataset([1, 2, 3])
        >>> dataset.get(1), dataset.get(3), len(dataset), list(dataset)
        (2, None, 3, [1, 2, 3])
    """

    @abstractmethod
    def get(self, index: int) -> I | None:
        """The item at `index`, or `None` if `index` is not in `[0, len(self))`."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of items."""

    def len(self) -> int:
        """The number of items (Burn's spelling of `len(dataset)`)."""
        return len(self)

    def is_empty(self) -> bool:
        """Whether the dataset has no item."""
        return len(self) == 0

    def get_many(self, indices: Iterable[int]) -> list[I]:
        """The items at `indices`, in that order, repeats included (Burn: `get_many`).

        Datasets that can fetch several items at once do better than `get` per item (a SQLite
        dataset reads them in one query); the data loader calls `get_many` for each batch.

        Args:
            indices: ints (or an int array) in `[0, len(self))`.

        Returns:
            One item per index.

        Raises:
            IndexError: if an index is not in `[0, len(self))` (Burn panics).
        """
        return [cast(I, self.get(index)) for index in check_indices(self, indices)]

    def get_stacked(self, indices: np.ndarray) -> I | None:
        """The items at `indices` as one item whose fields carry a leading batch dimension.

        The fast path of the data loader: a dataset that holds its items in arrays gathers a
        whole batch with one vectorised indexing operation. The default returns `None`
        ("not supported"), and the loader then falls back to `get` per item.

        Args:
            indices: int64 array of valid indices, shape `[B]`.

        Returns:
            The stacked item, or `None` if this dataset cannot stack its items.
        """
        del indices
        return None

    def iter(self) -> Iterator[I]:
        """Iterate over the items in order (Burn: `dataset.iter()`)."""
        return iter(self)

    def __iter__(self) -> Iterator[I]:
        for index in range(len(self)):
            yield self.get(index)  # type: ignore[misc]

    def __getitem__(self, index: int) -> I:
        try:
            position = operator.index(index)
        except TypeError:
            raise TypeError(
                f"Dataset indices must be integers. Received: {type(index).__name__}. "
                "Use `SelectionDataset(dataset, indices)` or `PartialDataset` to select several."
            ) from None
        size = len(self)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError(
                f"Dataset index out of range: index {index} for a dataset of {size} items."
            )
        # In range, `get` gives the item itself, which may be None (`InMemDataset([None])`).
        return cast(I, self.get(position))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)})"


def check_indices(dataset: Dataset[Any], indices: Iterable[int]) -> list[int]:
    """`indices` as Python ints, each checked to lie in `[0, len(dataset))`.

    Raises:
        TypeError: if an index is not an integer.
        IndexError: if an index is out of range (Burn: "Index out of bounds").
    """
    size = len(dataset)
    checked = []
    for index in indices:
        try:
            position = operator.index(index)
        except TypeError:
            raise TypeError(
                f"`get_many` needs integer indices. Received: {index!r} "
                f"({type(index).__name__}) for {type(dataset).__name__}."
            ) from None
        if not 0 <= position < size:
            raise IndexError(
                f"Index out of bounds for {type(dataset).__name__}: index {position} is not in "
                f"[0, {size}). Pass indices from 0 to len(dataset) - 1."
            )
        checked.append(position)
    return checked
