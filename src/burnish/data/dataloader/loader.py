"""`DataLoader` (Burn: `DataLoader`): batches of a dataset, on `torch.utils.data.DataLoader`."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic

import numpy as np
import torch
import torch.utils.data

import burnish.backend
from burnish.data.dataloader.batcher import Batcher, supports_stacked
from burnish.data.dataloader.sampler import BatchSampler, EpochBatches, worker_seed
from burnish.data.dataloader.transfer import PinnableBatch, move_to_device
from burnish.data.dataloader.worker_signals import worker_init
from burnish.data.dataset.base import Dataset, O
from burnish.data.dataset.transform.partial import PartialDataset

__all__ = ["DataLoader", "DataLoaderIterator", "Progress", "available_cpus"]

log = logging.getLogger("burnish.data")
_CAPS_TOLD: set[tuple[int, int]] = set()  # (asked, used) worker counts already logged
_CAPS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Progress:
    """How far an iteration is through its epoch (Burn: `Progress`).

    Attributes:
        items_processed: items (not batches) seen so far in this epoch.
        items_total: items in the whole epoch.
    """

    items_processed: int
    items_total: int


class DataLoader(Generic[O]):
    """Iterates over a dataset in batches; build one with `DataLoaderBuilder`.

    Every call to `iter()` (or `iter(loader)`) starts a new epoch, as in Burn: with a shuffle
    seed, epoch `n` visits the items in the order `numpy.random.default_rng([seed, n])
    .permutation(num_items)`, a pure function of `(seed, n)`, so two loaders with the same seed
    give the same batches and each epoch is reshuffled. The last batch may be smaller.

    Batches are produced by a `torch.utils.data.DataLoader` (worker processes, prefetching,
    pinned memory for CUDA devices). A loader never starts more worker processes than the
    CPUs the process may run on (`available_cpus()`); when it uses fewer than it was asked for
    it says so once, at INFO on the `burnish.data` logger (so in the experiment log). Worker
    RNGs (`random`, NumPy, torch) are seeded from `(seed, epoch)`, so with a deterministic
    batcher the batches equal those of `num_workers=0`, and with a random one they are
    reproducible. See README.md beside this file.

    Exact resume: `to_record()` holds the epoch counter; after `load_record(record)`,
    `iter(skip=k)` yields the batches `k, k+1, ...` of the epoch a fresh `iter()` would run,
    without loading the skipped items.
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batcher: Batcher[Any, O],
        *,
        batch_size: int = 1,
        seed: int | None = None,
        num_workers: int = 0,
        device: torch.device | str = "cpu",
        prefetch_factor: int | None = None,
        epoch: int = 0,
    ) -> None:
        if not (callable(getattr(dataset, "get", None)) and hasattr(dataset, "__len__")):
            raise TypeError(
                "The data loader needs a dataset with `get(index)` and `len()`. "
                f"Received: {type(dataset).__name__}. Wrap a list in `InMemDataset(items)`."
            )
        self._dataset = dataset
        self._batcher = batcher
        self._sampler = BatchSampler(len(dataset), batch_size, seed)
        self._num_workers = num_workers
        self._device = burnish.backend.device(device)
        self._prefetch_factor = prefetch_factor
        self._epoch = epoch
        # Worker RNGs follow `bn.seed` when the loader has no shuffle seed of its own.
        self._worker_base_seed = seed if seed is not None else torch.initial_seed()

    # -- Burn's DataLoader API ---------------------------------------------------------------

    def iter(self, skip: int = 0) -> DataLoaderIterator[O]:
        """Start the next epoch, from batch `skip` on (0: the whole epoch).

        Raises:
            ValueError: if `skip` is not in `[0, len(self)]`.
        """
        if isinstance(skip, bool) or not isinstance(skip, int) or not 0 <= skip <= len(self):
            raise ValueError(
                f"`skip` must be an integer in [0, {len(self)}] (the number of batches). "
                f"Received: skip={skip!r}."
            )
        epoch, self._epoch = self._epoch, self._epoch + 1
        batches = self._sampler.batches(epoch, skip)
        torch_loader = self._torch_loader(batches, epoch)
        return DataLoaderIterator(
            iter(torch_loader) if len(batches) else iter(()),
            self._sampler,
            epoch,
            skip,
            self._device if self._moves_batches() else None,
        )

    def __iter__(self) -> Iterator[O]:
        return self.iter()

    def __len__(self) -> int:
        """The number of batches per epoch."""
        return len(self._sampler)

    def num_items(self) -> int:
        """The number of items per epoch (this rank's share when sharded)."""
        return self._sampler.items_per_epoch

    def slice(self, start: int, end: int) -> DataLoader[O]:
        """A loader over the items `start <= i < end` of the dataset (not batches), with the same
        settings and epoch counter (Burn: `DataLoader::slice`).

        Raises:
            ValueError: if not `0 <= start <= end <= num_items()`.
        """
        if not 0 <= start <= end <= self.num_items():
            raise ValueError(
                f"`slice` needs 0 <= start <= end <= num_items ({self.num_items()}). "
                f"Received: start={start}, end={end}."
            )
        if self.world_size != 1:
            raise ValueError("Slice the loader before sharding it, not a shard.")
        return self._copy(PartialDataset(self._dataset, start, end), self._device)

    def shard(self, rank: int, world_size: int, pad: bool = True) -> DataLoader[O]:
        """This rank's share of every epoch, for `torch.distributed` training.

        Rank `rank` takes every `world_size`-th item of the epoch's (seeded) order. With `pad`
        (for training) the order is padded by repeating its first items so all ranks have the
        same number of items and batches; the batches of all ranks together equal one
        process's batches of `batch_size * world_size`, except the last, which repeats
        `-num_items % world_size` items. Without `pad` (for validation and evaluation: every
        item counted once) the shards differ by at most one item, and a rank may have one
        batch fewer than rank 0 (`max_batches()`).

        Args:
            rank: this process's rank in `[0, world_size)`.
            world_size: the number of processes.
            pad: repeat items so every rank has as many (see above).

        Raises:
            ValueError: if not `0 <= rank < world_size`, or the loader is already sharded.
        """
        if not (isinstance(world_size, int) and world_size >= 1 and 0 <= rank < world_size):
            raise ValueError(
                "`shard` needs 0 <= rank < world_size. "
                f"Received: rank={rank!r}, world_size={world_size!r}."
            )
        if self._sampler.world_size != 1:
            raise ValueError(f"This loader is already a shard: {self!r}. Shard the original.")
        loader = self._copy(self._dataset, self._device)
        loader._sampler = BatchSampler(
            self.num_items(), self.batch_size, self.seed, rank, world_size, pad
        )
        return loader

    def max_batches(self) -> int:
        """The batches per epoch of the shard with the most (rank 0's; `len(self)` unsharded)."""
        return self._sampler.max_batches

    @property
    def rank(self) -> int:
        """This loader's rank among `world_size` shards (0 when not sharded)."""
        return self._sampler.rank

    @property
    def world_size(self) -> int:
        """The number of shards each epoch is split into (1 when not sharded)."""
        return self._sampler.world_size

    def to_device(self, device: torch.device | str) -> DataLoader[O]:
        """A loader with the same settings and epoch counter whose batches go to `device`."""
        return self._copy(self._dataset, burnish.backend.device(device))

    # -- State and settings ------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """The epoch the next `iter()` will run (0 before the first)."""
        return self._epoch

    @property
    def device(self) -> torch.device:
        """The device batches are moved to (`set_device`)."""
        return self._device

    @property
    def batcher(self) -> Batcher[Any, O]:
        """The batcher that builds each batch from its items."""
        return self._batcher

    @property
    def batch_size(self) -> int:
        """Items per batch (the last batch of an epoch may hold fewer)."""
        return self._sampler.batch_size

    @property
    def num_workers(self) -> int:
        """Worker processes that load batches (0: in the main process)."""
        return self._num_workers

    @property
    def seed(self) -> int | None:
        """The shuffle seed, or `None` for the dataset order."""
        return self._sampler.seed

    @property
    def dataset(self) -> Dataset[Any]:
        """The dataset the loader reads."""
        return self._dataset

    def to_record(self) -> dict[str, Any]:
        """The loader's state: the epoch the next `iter()` runs, and the settings it depends on.

        For a mid-epoch checkpoint take the record *before* calling `iter()` for the epoch (or
        set `record["epoch"]` to the running iterator's `epoch`), then resume with
        `load_record(record)` and `iter(skip=batches_done)`.

        `num_items` is the items of the largest shard (all of them unsharded), the same on
        every rank; an unpadded shard also records `"pad": False`.
        """
        record = {
            "epoch": self._epoch,
            "seed": self.seed,
            "num_items": -(-self._sampler.num_items // self.world_size),
            "batch_size": self.batch_size,
            "world_size": self.world_size,
        }
        if not self._sampler.pad:
            record["pad"] = False
        return record

    def load_record(self, record: dict[str, Any]) -> DataLoader[O]:
        """Restore the epoch counter from `to_record()`; returns the loader.

        Raises:
            ValueError: if the record is malformed, or its seed, item count or batch size differ
                from this loader's (the batches would not be the same).
        """
        epoch = record.get("epoch") if isinstance(record, dict) else None
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(
                "A data loader record needs a non-negative int `epoch`. "
                f"Received: {record!r}. Pass the dict returned by `DataLoader.to_record()`."
            )
        for key, value in self.to_record().items():
            if key != "epoch" and key in record and record[key] != value:
                raise ValueError(
                    f"The data loader record has {key}={record[key]!r} but this loader has "
                    f"{key}={value!r}; resuming would give different batches. Build the loader "
                    "as in the recorded run."
                )
        self._epoch = epoch
        return self

    def __repr__(self) -> str:
        return (
            f"DataLoader(num_items={self.num_items()}, batch_size={self.batch_size}, "
            f"seed={self.seed}, num_workers={self._num_workers}, device={self._device}, "
            f"epoch={self._epoch})"
        )

    # -- Internals -----------------------------------------------------------------------------

    def _copy(self, dataset: Dataset[Any], device: torch.device) -> DataLoader[O]:
        loader = DataLoader(
            dataset,
            self._batcher,
            batch_size=self.batch_size,
            seed=self.seed,
            num_workers=self._num_workers,
            device=device,
            prefetch_factor=self._prefetch_factor,
            epoch=self._epoch,
        )
        loader._worker_base_seed = self._worker_base_seed
        sampler = self._sampler
        if sampler.world_size != 1:
            loader._sampler = BatchSampler(
                len(dataset),
                sampler.batch_size,
                sampler.seed,
                sampler.rank,
                sampler.world_size,
                sampler.pad,
            )
        return loader

    def _moves_batches(self) -> bool:
        """Whether batches are built on the CPU in workers, then moved to the device here."""
        return self._num_workers > 0 and self._device.type != "cpu"

    def _torch_loader(self, batches: EpochBatches, epoch: int) -> torch.utils.data.DataLoader:
        workers = _worker_processes(self._num_workers)
        moves = self._moves_batches()
        batch_device = torch.device("cpu") if workers > 0 else self._device
        generator = torch.Generator().manual_seed(worker_seed(self._worker_base_seed, epoch))
        return torch.utils.data.DataLoader(
            _TorchView(self._dataset, supports_stacked(self._batcher)),
            # torch's stub wants lists of indices; any index sequence (here ndarray) works.
            batch_sampler=batches,  # type: ignore[arg-type]
            num_workers=workers,
            collate_fn=_Collate(self._batcher, batch_device, wrap=moves),
            pin_memory=moves and self._device.type == "cuda",
            prefetch_factor=self._prefetch_factor if workers > 0 else None,
            generator=generator,
            worker_init_fn=worker_init() if workers > 0 else None,  # preemption signals
        )


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the OS has one, else all.

    The same count torch checks `num_workers` against before it warns.
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _worker_processes(asked: int) -> int:
    """`asked`, capped at `available_cpus()`; the first time a cap applies it is logged."""
    if asked <= 1:
        return asked
    used = min(asked, available_cpus())
    if used < asked:
        with _CAPS_LOCK:
            told = (asked, used) in _CAPS_TOLD
            _CAPS_TOLD.add((asked, used))
        if not told:
            log.info(
                "Data loader: %d worker processes were asked for, but this process may run on "
                "%d CPUs, so it starts %d.",
                asked,
                used,
                used,
            )
    return used


class DataLoaderIterator(Iterator[O]):
    """One epoch of batches (Burn: `DataLoaderIterator`), with its `progress()`."""

    def __init__(
        self,
        batches: Iterator[Any],
        sampler: BatchSampler,
        epoch: int,
        skip: int,
        device: torch.device | None,
    ) -> None:
        self._batches = batches
        self._sampler = sampler
        self._device = device
        self.epoch = epoch
        self.batch_index = skip  # the index of the next batch in the epoch

    def __iter__(self) -> DataLoaderIterator[O]:
        return self

    def __next__(self) -> O:
        batch = next(self._batches)
        self.batch_index += 1
        if self._device is not None:
            return move_to_device(batch.value, self._device)
        return batch

    def progress(self) -> Progress:
        """Items of the epoch covered by the batches yielded so far (skipped ones included)."""
        total = self._sampler.items_per_epoch
        return Progress(min(self.batch_index * self._sampler.batch_size, total), total)


class _TorchView(torch.utils.data.Dataset):
    """Adapts a burnish dataset to torch's fetchers, whole batches at a time."""

    def __init__(self, dataset: Dataset[Any], stacked: bool) -> None:
        self.dataset = dataset
        self.stacked = stacked

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.dataset.get(index)

    def __getitems__(self, indices: np.ndarray) -> Any:
        if self.stacked:
            stacked = self.dataset.get_stacked(indices)
            if stacked is not None:
                return _Stacked(stacked)
        get_many = getattr(self.dataset, "get_many", None)
        if get_many is not None:  # one call per batch (a SQLite dataset: one query)
            return get_many(indices)
        return [self.dataset.get(int(index)) for index in indices]


class _Stacked:
    """Marks a stacked item (the fast path) for the collate function."""

    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item


class _Collate:
    """Calls the batcher: `batch_stacked` for a stacked item, else `batch`."""

    def __init__(self, batcher: Batcher[Any, Any], device: torch.device, wrap: bool) -> None:
        self.batcher = batcher
        self.device = device
        self.wrap = wrap

    def __call__(self, data: Any) -> Any:
        if isinstance(data, _Stacked):
            batch = self.batcher.batch_stacked(data.item, self.device)
        else:
            batch = self.batcher.batch(data, self.device)
        return PinnableBatch(batch) if self.wrap else batch
