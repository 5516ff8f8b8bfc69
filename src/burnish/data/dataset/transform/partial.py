"""`PartialDataset`: a contiguous range of another dataset (Burn: `PartialDataset`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic

import numpy as np

from burnish.data.dataset.base import Dataset, I, check_indices

__all__ = ["PartialDataset"]


class PartialDataset(Dataset[I], Generic[I]):
    """The items `start_index <= i < end_index` of `dataset`, re-indexed from 0.

    Args:
        dataset: the source dataset.
        start_index: first index included.
        end_index: first index excluded; clipped to `len(dataset)` as Burn does.

    Raises:
        ValueError: if `start_index < 0` or `end_index < start_index`.
    """

    def __init__(self, dataset: Dataset[I], start_index: int, end_index: int) -> None:
        if start_index < 0 or end_index < start_index:
            raise ValueError(
                "`PartialDataset` needs 0 <= start_index <= end_index. "
                f"Received: start_index={start_index}, end_index={end_index}."
            )
        self.dataset = dataset
        self.start_index = start_index
        self.end_index = end_index

    def get(self, index: int) -> I | None:
        """The item at `start_index + index` of the source, or `None` outside the range."""
        if not 0 <= index < len(self):
            return None
        return self.dataset.get(index + self.start_index)

    def __len__(self) -> int:
        return max(0, min(self.end_index, len(self.dataset)) - self.start_index)

    def get_many(self, indices: Iterable[int]) -> list[I]:
        """The source's items at `start_index + i`, fetched in one `get_many` of the source.

        Raises:
            IndexError: if an index is not in `[0, len(self))`.
        """
        return self.dataset.get_many([i + self.start_index for i in check_indices(self, indices)])

    def get_stacked(self, indices: np.ndarray) -> I | None:
        """The source's stacked items at `indices + start_index` (see `Dataset.get_stacked`)."""
        return self.dataset.get_stacked(indices + self.start_index)

    @staticmethod
    def split(dataset: Dataset[I], num: int) -> list[PartialDataset[I]]:
        """Split into `num` consecutive parts of `len(dataset) // num` items; the last part also
        takes the remainder (Burn: `PartialDataset::split`).

        Raises:
            ValueError: if `num < 1`.
        """
        _check_num(num)
        size = len(dataset) // num
        bounds = [i * size for i in range(num)] + [len(dataset)]
        return [PartialDataset(dataset, bounds[i], bounds[i + 1]) for i in range(num)]

    @staticmethod
    def split_chunks(dataset: Dataset[I], num: int, batch_size: int) -> list[PartialDataset[I]]:
        """Split into at most `num` parts made of whole batches of `batch_size` items; the first
        parts take one extra batch each when the batches do not divide evenly (Burn:
        `PartialDataset::split_chunks`). Empty parts are left out.

        Raises:
            ValueError: if `num < 1` or `batch_size < 1`.
        """
        _check_num(num)
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be >= 1. Received: batch_size={batch_size}.")
        total = len(dataset)
        num_batches = -(-total // batch_size)
        per_split, extra = divmod(num_batches, num)
        parts, batch = [], 0
        for i in range(num):
            end_batch = batch + per_split + (1 if i < extra else 0)
            start, end = batch * batch_size, min(end_batch * batch_size, total)
            if start < total:
                parts.append(PartialDataset(dataset, start, end))
            batch = end_batch
        return parts


def _check_num(num: int) -> None:
    if num < 1:
        raise ValueError(f"`num` (the number of parts) must be >= 1. Received: num={num}.")
