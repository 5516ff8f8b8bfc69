"""`SamplerDataset`: random draws from another dataset (Burn: `SamplerDataset`)."""

from __future__ import annotations

import threading
from typing import Generic

import numpy as np

from burnish.data.dataset.base import Dataset, I
from burnish.data.dataset.transform.selection import RngSource, make_rng

__all__ = ["SamplerDataset"]


class SamplerDataset(Dataset[I], Generic[I]):
    """A dataset of `size` items, each a random draw from `dataset` (Burn semantics).

    As in Burn, the index passed to `get` only bounds the dataset: every `get(i)` with
    `0 <= i < size` returns the *next* draw, so reading the same index twice may give two items.

    - With replacement (default), each draw is uniform over `dataset`.
    - Without replacement, draws come from a pool holding every index `size // len(dataset)`
      times plus `size % len(dataset)` distinct random indices, in random order; the pool is
      refilled when empty. So `size` consecutive draws cover the dataset as evenly as possible.

    Draws are stateful: data loader workers each hold a copy, so with `num_workers > 0` the
    draws of different workers are not coordinated.

    Args:
        dataset: the source dataset (non-empty).
        size: an `int` number of items, a `float` ratio of `len(dataset)`, or `None` for
            `len(dataset)`.
        replacement: draw with (`True`) or without (`False`) replacement.
        seed: an `int` seed, a NumPy `Generator`, or `None` for OS entropy.

    Raises:
        ValueError: if `dataset` is empty or `size` is negative.
    """

    def __init__(
        self,
        dataset: Dataset[I],
        size: int | float | None = None,
        *,
        replacement: bool = True,
        seed: RngSource = None,
    ) -> None:
        if len(dataset) == 0:
            raise ValueError("`SamplerDataset` needs a non-empty dataset to draw from.")
        if size is None:
            size = len(dataset)
        elif isinstance(size, float):
            if size < 0:
                raise ValueError(f"A size ratio must be >= 0. Received: size={size}.")
            size = int(len(dataset) * size)
        if size < 0:
            raise ValueError(f"`size` must be >= 0. Received: size={size}.")
        self.dataset = dataset
        self.size = int(size)
        self.replacement = replacement
        self._rng = make_rng(seed)
        self._pool = np.empty(0, dtype=np.int64)
        self._lock = threading.Lock()

    @classmethod
    def with_replacement(
        cls, dataset: Dataset[I], size: int, seed: RngSource = None
    ) -> SamplerDataset[I]:
        """`size` uniform draws with replacement."""
        return cls(dataset, size, replacement=True, seed=seed)

    @classmethod
    def without_replacement(
        cls, dataset: Dataset[I], size: int, seed: RngSource = None
    ) -> SamplerDataset[I]:
        """`size` draws without replacement (see the class docstring)."""
        return cls(dataset, size, replacement=False, seed=seed)

    def is_with_replacement(self) -> bool:
        """Whether draws are made with replacement."""
        return self.replacement

    def get(self, index: int) -> I | None:
        """The next random draw if `0 <= index < len(self)`, else `None` (`index` only bounds)."""
        if not 0 <= index < self.size:
            return None
        return self.dataset.get(self._next_index())

    def __len__(self) -> int:
        return self.size

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]  # locks do not pickle (spawned loader workers)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _next_index(self) -> int:
        with self._lock:
            if self.replacement:
                return int(self._rng.integers(len(self.dataset)))
            if len(self._pool) == 0:
                self._pool = self._refill()
            index, self._pool = self._pool[-1], self._pool[:-1]
            return int(index)

    def _refill(self) -> np.ndarray:
        num = len(self.dataset)
        full = np.tile(np.arange(num, dtype=np.int64), self.size // num)
        rest = self._rng.choice(num, self.size - len(full), replace=False)
        return self._rng.permutation(np.concatenate([full, rest.astype(np.int64)]))
