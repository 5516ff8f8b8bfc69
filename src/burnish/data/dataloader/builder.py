"""`DataLoaderBuilder` (Burn: `DataLoaderBuilder`): configure, then `build(dataset)`."""

from __future__ import annotations

from typing import Any, Generic

import torch

import burnish.backend
from burnish.data.dataloader.batcher import Batcher
from burnish.data.dataloader.loader import DataLoader
from burnish.data.dataset.base import Dataset, O
from burnish.value_builder import ValueBuilder

__all__ = ["DataLoaderBuilder"]


class DataLoaderBuilder(ValueBuilder, Generic[O]):
    """Builds a `DataLoader` (Burn: `DataLoaderBuilder::new(batcher)`).

    Every method returns a new builder and leaves this one as it was (Burn's builder is
    consumed by each call): `loader.shuffle(0).build(train)` then `loader.build(valid)`
    shuffles the training data only.

    Args:
        batcher: turns a list of items into a batch (see `Batcher`).

    Raises:
        TypeError: if `batcher` has no `batch(items, device)` method.

    Example:
        >>> import torch
        >>> from burnish.data.dataloader import Batcher, DataLoaderBuilder
        >>> from burnish.data.dataset import InMemDataset
        >>> class PairBatcher(Batcher):
        ...     def batch(self, items, device):
        ...         inputs = torch.tensor([x for x, _ in items], dtype=torch.float32)
        ...         targets = torch.tensor([y for _, y in items])
        ...         return inputs.to(device), targets.to(device)
        >>> dataset = InMemDataset([(float(i), i % 2) for i in range(10)])
        >>> loader = (
        ...     DataLoaderBuilder(PairBatcher())
        ...     .batch_size(4)
        ...     .shuffle(42)  # a new order each epoch, the same for the same seed
        ...     .num_workers(0)  # > 0: worker processes build the batches
        ...     .set_device("cpu")  # e.g. "cuda": batches arrive on the GPU
        ...     .build(dataset)
        ... )
        >>> [len(targets) for inputs, targets in loader.iter()]  # one epoch
        [4, 4, 2]
    """

    def __init__(self, batcher: Batcher[Any, O]) -> None:
        if not callable(getattr(batcher, "batch", None)):
            raise TypeError(
                "`DataLoaderBuilder` needs a batcher with a `batch(items, device)` method. "
                f"Received: {type(batcher).__name__}. Subclass `burnish.data.dataloader.Batcher`."
            )
        self._batcher = batcher
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._device = torch.device("cpu")
        self._prefetch_factor: int | None = None

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[O]:
        """Items per batch (default 1, as in Burn); the last batch may be smaller."""
        _check_int("batch_size", batch_size, minimum=1)
        return self._replace(_batch_size=batch_size)

    def shuffle(self, seed: int) -> DataLoaderBuilder[O]:
        """Shuffle the items with `seed`, in a new order each epoch (default: dataset order)."""
        _check_int("seed", seed, minimum=0)
        return self._replace(_seed=seed)

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[O]:
        """Worker processes building batches (default 0: in the calling process)."""
        _check_int("num_workers", num_workers, minimum=0)
        return self._replace(_num_workers=num_workers)

    def set_device(self, device: torch.device | str) -> DataLoaderBuilder[O]:
        """The device batches are built on or moved to (default `"cpu"`)."""
        return self._replace(_device=burnish.backend.device(device))

    def prefetch_factor(self, prefetch_factor: int) -> DataLoaderBuilder[O]:
        """Batches each worker prepares ahead (torch's default, 2, when not set)."""
        _check_int("prefetch_factor", prefetch_factor, minimum=1)
        return self._replace(_prefetch_factor=prefetch_factor)

    def build(self, dataset: Dataset[Any]) -> DataLoader[O]:
        """The data loader over `dataset`.

        Raises:
            TypeError: if `dataset` has no `get(index)` / `len()`.
        """
        return DataLoader(
            dataset,
            self._batcher,
            batch_size=self._batch_size,
            seed=self._seed,
            num_workers=self._num_workers,
            device=self._device,
            prefetch_factor=self._prefetch_factor,
        )


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}.")
