"""`WindowsDataset`: every run of `size` consecutive items (Burn: `WindowsDataset`)."""

from __future__ import annotations

from typing import Generic

from burnish.data.dataset.base import Dataset, I

__all__ = ["WindowsDataset"]


class WindowsDataset(Dataset[list[I]], Generic[I]):
    """Item `i` is the list `[dataset[i], ..., dataset[i + size - 1]]` (a sliding window).

    There are `max(len(dataset) - size + 1, 0)` windows.

    Args:
        dataset: the source dataset.
        size: the number of items per window.

    Raises:
        ValueError: if `size < 1`.

    Example:
        >>> list(WindowsDataset(InMemDataset([1, 2, 3, 4]), 3))
        [[1, 2, 3], [2, 3, 4]]
    """

    def __init__(self, dataset: Dataset[I], size: int) -> None:
        if size < 1:
            raise ValueError(f"Window `size` must be >= 1. Received: size={size}.")
        self.dataset = dataset
        self.size = size

    def get(self, index: int) -> list[I] | None:
        """The window starting at `index` (a list of `size` items), or `None` if out of range."""
        if not 0 <= index < len(self):
            return None
        window = []
        for position in range(index, index + self.size):
            item = self.dataset.get(position)
            if item is None:
                return None
            window.append(item)
        return window

    def __len__(self) -> int:
        return max(len(self.dataset) - self.size + 1, 0)
