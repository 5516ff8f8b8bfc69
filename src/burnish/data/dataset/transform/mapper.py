"""`MapperDataset`: apply a function to every item, lazily (Burn: `MapperDataset`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic

from burnish.data.dataset.base import Dataset, I, O

__all__ = ["Mapper", "MapperDataset"]


class Mapper(ABC, Generic[I, O]):
    """Maps one item to another (Burn: `Mapper<I, O>`). A plain callable works as well."""

    @abstractmethod
    def map(self, item: I) -> O:
        """The mapped item."""


class MapperDataset(Dataset[O], Generic[I, O]):
    """A view of `dataset` whose items are `mapper(item)`, computed on each `get`.

    Args:
        dataset: the source dataset.
        mapper: a `Mapper` (its `map` is called) or any callable `item -> new item`.

    Example:
        >>> squares = MapperDataset(InMemDataset([1, 2, 3]), lambda x: x * x)
        >>> list(squares)
        [1, 4, 9]
    """

    def __init__(self, dataset: Dataset[I], mapper: Mapper[I, O] | Callable[[I], O]) -> None:
        function: Callable[[I], O]
        if isinstance(mapper, Mapper):
            function = mapper.map
        elif callable(mapper):
            function = mapper
        else:
            raise TypeError(
                "`mapper` must be a `Mapper` or a callable item -> item. "
                f"Received: {type(mapper).__name__}."
            )
        self.dataset = dataset
        self.mapper = mapper
        self._function: Callable[[I], O] = function

    def get(self, index: int) -> O | None:
        """The mapped item at `index`, or `None` if `index` is not in `[0, len(self))`."""
        item = self.dataset.get(index)
        return None if item is None else self._function(item)

    def __len__(self) -> int:
        return len(self.dataset)
