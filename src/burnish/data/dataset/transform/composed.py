"""`ComposedDataset`: several datasets one after another (Burn: `ComposedDataset`)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Generic

from burnish.data.dataset.base import Dataset, I

__all__ = ["ComposedDataset"]


class ComposedDataset(Dataset[I], Generic[I]):
    """The concatenation of `datasets`: the items of the first, then of the second, ...

    Lengths are read on every call, so the view follows datasets that grow or shrink.

    Args:
        datasets: the datasets, in order.
    """

    def __init__(self, datasets: Sequence[Dataset[I]]) -> None:
        self.datasets = list(datasets)

    def get(self, index: int) -> I | None:
        """The item at `index` of the concatenation, or `None` if `index` is out of range."""
        if index < 0:
            return None
        ends = list(itertools.accumulate(len(dataset) for dataset in self.datasets))
        position = bisect.bisect_right(ends, index)
        if position == len(ends):
            return None
        start = ends[position - 1] if position else 0
        return self.datasets[position].get(index - start)

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self.datasets)
