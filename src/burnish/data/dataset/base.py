"""The `Dataset` base class (Burn's `Dataset` trait): a sized collection of items."""

from __future__ import annotations

import operator
from abc import ABC
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

import numpy as np
from typing_extensions import Self

__all__ = ["Dataset", "I", "O", "check_indices"]

I = TypeVar("I")  # noqa: E741 - Burn's name for the item type
O = TypeVar("O")  # noqa: E741 - Burn's name for an output item type


class Dataset(ABC, Generic[I]):
    """A sized, indexable collection of items (Burn: `Dataset<I>`).

    A subclass defines Burn's two methods, `get(index)` and `len()`, or Python's two,
    `__getitem__` and `__len__` (any mix of one of each works); the base class derives the
    others from them. Indexing follows Burn for `get` (an index outside `[0, len)` gives
    `None`) and Python for `dataset[i]` (negative indices count from the end; an index out of
    range raises `IndexError`).

    Datasets that hold their items as arrays may also implement `get_stacked`, the loader's fast
    path: see `burnish.data.dataloader.Batcher`.

    Example:
        >>> class Squares(Dataset[int]):
        ...     def get(self, index):
        ...         return index * index if 0 <= index < 3 else None
        ...     def len(self):
        ...         return 3
        >>> dataset = Squares()
        >>> dataset.get(2), dataset.get(3), len(dataset), dataset[-1], list(dataset)
        (4, None, 3, 4, [0, 1, 4])
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        del args, kwargs  # taken by __init__
        missing = _missing_methods(cls)
        if missing:
            raise TypeError(
                f"Can't instantiate abstract Dataset class {cls.__name__}: it defines "
                f"{' and '.join(missing)}. A Dataset defines `get(index)` and `len()` (Burn's "
                "trait), or `__getitem__(index)` and `__len__()`; add the missing one."
            )
        return super().__new__(cls)

    def get(self, index: int) -> I | None:
        """The item at `index`, or `None` if `index` is not in `[0, len(self))`.

        Subclasses define it (Burn's `get`), or define `__getitem__` and inherit this one.
        """
        if not 0 <= index < len(self):
            return None
        return self[index]

    def __len__(self) -> int:
        """The number of items: `len()` of a subclass that defines Burn's `len`."""
        return self.len()

    def len(self) -> int:
        """The number of items (Burn's spelling of `len(dataset)`); a subclass may define it."""
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


def _missing_methods(cls: type[Dataset[Any]]) -> list[str]:
    """What `cls` lacks of a Dataset, as "neither `get` nor `__getitem__`" phrases."""
    missing = []
    if cls.get is Dataset.get and cls.__getitem__ is Dataset.__getitem__:
        missing.append("neither `get` nor `__getitem__`")
    if cls.__len__ is Dataset.__len__ and cls.len is Dataset.len:
        missing.append("neither `len` nor `__len__`")
    return missing


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
