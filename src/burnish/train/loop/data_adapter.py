"""One interface over the data loaders a `Learner` accepts (Keras' data adapters).

burnish's `DataLoader` resumes mid-epoch exactly, moves batches to a device and shards its
epochs across ranks. torchdata's `StatefulDataLoader` resumes mid-epoch from its `state_dict()`.
A `torch.utils.data.DataLoader` (or any sized iterable of batches) is iterated as it is. The
learner only talks to the adapter, never to the loader's own methods.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import torch

from burnish.data.dataloader import DataLoader, Progress
from burnish.rng import preserved_rng
from burnish.train.loop.stateful_loader import (
    epoch_over,
    is_stateful_loader,
    record_error,
)

__all__ = [
    "NO_BATCH",
    "BurnishDataAdapter",
    "DataAdapter",
    "IterableDataAdapter",
    "StatefulDataAdapter",
    "check_has_batches",
    "data_adapter",
    "no_batch_error",
    "no_batch_in_epoch",
]

log = logging.getLogger("burnish.train")


class _NoBatch:
    """The type of `NO_BATCH`."""

    def __repr__(self) -> str:
        return "NO_BATCH"


NO_BATCH: Any = _NoBatch()
"""Yielded by an unpadded shard (validation) whose rank has no batch left while rank 0 has:
the loop runs as many iterations on every rank, so their collectives stay in step."""


class DataAdapter(ABC):
    """A data loader as the learner sees it: epochs, progress, device, records, shards."""

    def __init__(self) -> None:
        self.items_total = 0
        self.batch_size = 1

    def iterate(self, skip: int = 0) -> Iterator[Any]:
        """Start an epoch from batch `skip` on; progress counts from the epoch's start."""
        self.items_total, self.batch_size = self._epoch_sizes()
        return self._iterate(skip)

    def progress(self, iteration: int) -> Progress:
        """Items processed after `iteration` batches of the current epoch."""
        items = min(iteration * self.batch_size, self.items_total)
        return Progress(items, self.items_total)

    @abstractmethod
    def num_batches(self) -> int:
        """The iterations of one epoch (on this rank)."""

    @abstractmethod
    def to_device(self, device: torch.device) -> DataAdapter:
        """An adapter whose batches are on `device`."""

    @abstractmethod
    def shard(self, rank: int, world_size: int, pad: bool = True) -> DataAdapter:
        """An adapter over this rank's share of every epoch.

        With `pad` (training) every rank gets as many items, some repeated; without (validation)
        each item is seen once, and a rank whose share has ended yields `NO_BATCH` until the
        others end, so every rank runs the same number of iterations.
        """

    @abstractmethod
    def to_record(self) -> dict[str, Any] | None:
        """The loader's position (None: the loader cannot resume exactly)."""

    @abstractmethod
    def load_record(self, record: dict[str, Any]) -> None:
        """Continue from a `to_record()` position."""

    def resume(self, start: Any, now: Any, skip: int | None) -> None:
        """Continue from a checkpoint's records of this loader: `start`, taken when its epoch
        began, and `now`, at the checkpoint. `skip` is the batch the loop's next `iterate(skip)`
        starts from while the checkpoint is inside the loader's epoch; None once that epoch is
        over (the next `iterate` starts a new one).

        By default: inside the epoch, back to its start (the loop's `iterate(skip)` goes on from
        there); after it, `now`.
        """
        record = start if skip is not None else now
        if record is not None:
            self.load_record(record)

    @abstractmethod
    def _iterate(self, skip: int) -> Iterator[Any]: ...

    @abstractmethod
    def _epoch_sizes(self) -> tuple[int, int]:
        """(items per epoch, items per batch)."""


class BurnishDataAdapter(DataAdapter):
    """burnish's `DataLoader`: exact mid-epoch resume, device moves and sharding."""

    def __init__(self, loader: DataLoader[Any], iterations: int | None = None) -> None:
        super().__init__()
        self.loader = loader
        self.iterations = iterations  # an unpadded shard's iterations per epoch (rank 0's)

    def num_batches(self) -> int:
        """The loader's batches per epoch (an unpadded shard: rank 0's, as it iterates)."""
        return self.iterations if self.iterations is not None else len(self.loader)

    def to_device(self, device: torch.device) -> DataAdapter:
        """An adapter over the loader with its batches moved to `device`."""
        return BurnishDataAdapter(self.loader.to_device(device), self.iterations)

    def shard(self, rank: int, world_size: int, pad: bool = True) -> DataAdapter:
        """An adapter over the loader's share `rank` of `world_size` of every epoch."""
        shard = self.loader.shard(rank, world_size, pad=pad)
        return BurnishDataAdapter(shard, None if pad else shard.max_batches())

    def to_record(self) -> dict[str, Any] | None:
        """The loader's position (epoch, seed, settings) for a checkpoint."""
        return self.loader.to_record()

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue from a `to_record()` position."""
        self.loader.load_record(record)

    def resume(self, start: Any, now: Any, skip: int | None) -> None:
        """Inside the epoch: its start (`iterate(skip)` then skips by index); after it: the
        epoch number alone, which any world size continues."""
        if skip is None and now is not None:
            now = {"epoch": now["epoch"]}
        super().resume(start, now, skip)

    def _iterate(self, skip: int) -> Iterator[Any]:
        own = len(self.loader)
        batches = self.loader.iter(skip=min(skip, own))
        if self.iterations is None:
            return batches
        return itertools.chain(
            batches, itertools.repeat(NO_BATCH, self.iterations - max(skip, own))
        )

    def _epoch_sizes(self) -> tuple[int, int]:
        return self.loader.num_items(), self.loader.batch_size


class IterableDataAdapter(DataAdapter):
    """A `torch.utils.data.DataLoader` or any sized iterable, used as it is.

    Its batches stay where the loader puts them, every rank iterates all of it (give it a
    `DistributedSampler`), and a resumed epoch skips batches by drawing them.
    """

    def __init__(self, loader: Any) -> None:
        super().__init__()
        self.loader = loader

    def num_batches(self) -> int:
        """`len(loader)`."""
        return len(self.loader)

    def to_device(self, device: torch.device) -> DataAdapter:
        """This adapter: the batches stay where the loader puts them."""
        return self

    def shard(self, rank: int, world_size: int, pad: bool = True) -> DataAdapter:
        """This adapter, unsharded (a warning says that every rank reads all of it)."""
        log.warning(
            "%s has no `shard`: every rank iterates it as it is. Give it a "
            "torch.utils.data.DistributedSampler, or use burnish's DataLoaderBuilder.",
            type(self.loader).__name__,
        )
        return self

    def to_record(self) -> dict[str, Any] | None:
        """None: a foreign loader's position is not recorded."""
        return None

    def load_record(self, record: dict[str, Any]) -> None:
        """Nothing to restore (a resumed epoch skips batches by drawing them)."""
        pass

    def _iterate(self, skip: int) -> Iterator[Any]:
        return itertools.islice(iter(self.loader), skip, None)

    def _epoch_sizes(self) -> tuple[int, int]:
        batches = len(self.loader)
        dataset = getattr(self.loader, "dataset", None)
        items = len(dataset) if dataset is not None else batches
        size = getattr(self.loader, "batch_size", None)
        if not (isinstance(size, int) and size > 0):
            size = max(1, -(-items // max(batches, 1)))
        return items, size


class StatefulDataAdapter(IterableDataAdapter):
    """torchdata's `StatefulDataLoader`: a resume loads its `state_dict()` and draws nothing.

    Its record is the loader's state after the batches the loop drew from it (torchdata counts
    the batches it yielded, not those its workers prefetched), how many the epoch has drawn,
    and whether the epoch ran out. Iterators are made with the random generators put back
    afterwards: a resumed run makes them at other moments than a straight one, and its
    dropout and augmentations must draw the same numbers (a restored iterator takes its
    workers' seed from the state).
    """

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self.drawn = 0  # batches of the current epoch the loop drew
        self.ended = False  # the current epoch ran out
        self._loaded: int | None = None  # a loaded state's batch, until the next iterate

    def to_record(self) -> dict[str, Any]:
        """`{"state": loader.state_dict(), "drawn": n, "ended": bool}`."""
        with preserved_rng():  # the first state_dict() makes an iterator
            state = copy.deepcopy(self.loader.state_dict())
        return {"state": state, "drawn": self.drawn, "ended": self.ended}

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue from a `to_record()` state (the next `iterate` goes on from it).

        Raises:
            ValueError: if `record` is not a StatefulDataLoader's, or its number of workers
                is not the loader's.
        """
        error = record_error(record, self.loader)
        if error is not None:
            raise ValueError(error)
        self.loader.load_state_dict(copy.deepcopy(dict(record["state"])))
        self.drawn, self.ended = record["drawn"], record["ended"]
        self._loaded = 0 if self.ended else self.drawn

    def resume(self, start: Any, now: Any, skip: int | None) -> None:
        """Inside the epoch: `now`, which stands at batch `skip`; after it: `now`, its epoch
        ended if it was cut short (a step budget, early stopping). A checkpoint of a run
        trained with a plain torch DataLoader has no state: `iterate(skip)` then draws."""
        if now is None:  # nothing recorded: the batches are drawn again
            return
        error = record_error(now, self.loader)
        if error is not None:
            raise ValueError(error)
        if skip is None and not now["ended"] and now["drawn"] > 0:
            now = {**now, "state": epoch_over(dict(now["state"])), "ended": True}
        at = 0 if now["ended"] else now["drawn"]
        if skip is None or at == skip:
            self.load_record(now)
        elif start is not None:  # a validation redone in full: from its start
            self.load_record(start)

    def _iterate(self, skip: int) -> Iterator[Any]:
        at, self._loaded = self._loaded or 0, None
        if skip < at:
            raise RuntimeError(
                f"The StatefulDataLoader's loaded state stands at batch {at} of its epoch, but "
                f"the loop resumes at batch {skip}: the checkpoint's records disagree."
            )
        with preserved_rng():  # a resumed run makes this iterator where a straight one did not
            batches = iter(self.loader)
        self.drawn, self.ended = skip, False
        return self._count(itertools.islice(batches, skip - at, None))

    def _count(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            self.drawn += 1
            yield batch
        self.ended = True


def data_adapter(loader: Any) -> DataAdapter:
    """The adapter for `loader`.

    Raises:
        TypeError: if `loader` is neither a burnish `DataLoader` nor a sized iterable.
    """
    if isinstance(loader, DataAdapter):
        return loader
    if isinstance(loader, DataLoader):
        return BurnishDataAdapter(loader)
    if is_stateful_loader(loader):
        return StatefulDataAdapter(loader)
    if hasattr(loader, "__iter__") and hasattr(loader, "__len__"):
        return IterableDataAdapter(loader)
    raise TypeError(
        "A data loader must be a burnish DataLoader (DataLoaderBuilder(...).build(dataset)), a "
        f"torch.utils.data.DataLoader, or a sized iterable of batches. Received: {loader!r}."
    )


# What to do about an empty loader, by its role.
_EMPTY_ADVICE = {
    "train": "Give it a dataset with at least one item (check the dataset's path, split, "
    "filters and PartialDataset range; a torch DataLoader with drop_last needs at least "
    "one full batch).",
    "valid": "Give it at least one held-out item (a few hundred are enough), e.g. "
    "`PartialDataset(MnistDataset.test(), 0, 256)`; or, to train without validation, leave "
    "it out: `learner.fit(dataloader_train)`, `SupervisedTraining(artifact_dir, "
    "dataloader_train)`.",
    "test": "Give it at least one item, or leave that (name, data loader) pair out of "
    "`eval`/`eval_all`.",
}


def _contents(loader: Any) -> str:
    """`ClassName over N items, batch size B`, as far as the loader tells."""
    items: Any = None
    if isinstance(loader, DataLoader):
        items = loader.num_items()
    else:
        with contextlib.suppress(AttributeError, TypeError):  # no dataset, or no len()
            items = len(loader.dataset)
    size = getattr(loader, "batch_size", None)
    text = type(loader).__name__
    if items is not None:
        text += f" over {items} items"
    return text + (f", batch size {size}" if isinstance(size, int) else "")


def no_batch_error(loader: Any, split: str, detail: str, name: str | None = None) -> ValueError:
    """The error for a loader of `split` ("train", "valid" or "test", with the evaluation's
    `name`) that has no batch; `detail` says how that was seen."""
    if split == "test":
        which = f"The test data loader {name!r}"
    else:
        which = f"The {split} data loader (`dataloader_{split}`)"
    return ValueError(
        f"{which} yields no batches: {detail} ({_contents(loader)}). Its metrics would be NaN "
        f"and nothing would be learned or measured. {_EMPTY_ADVICE[split]}"
    )


def no_batch_in_epoch(adapter: DataAdapter, split: str, name: str | None = None) -> ValueError:
    """The error for an epoch of `adapter` that drew no batch although its `len()` was not 0
    (checked once, after the epoch's loop)."""
    loader = getattr(adapter, "loader", adapter)
    detail = f"an epoch drew none although len(loader) is {adapter.num_batches()}"
    return no_batch_error(loader, getattr(split, "value", split), detail, name)


def check_has_batches(loader: Any, split: str, name: str | None = None) -> None:
    """Raise before training if `loader` has no batch by its `len()`. A loader whose `len()`
    is not usable, or not true, is caught at its first epoch's end (the loop's
    `no_batch_error`): no check per batch.

    Raises:
        ValueError: if `len(loader)` is 0.
    """
    adapter = data_adapter(loader)
    try:
        batches = adapter.num_batches()
    except TypeError:  # e.g. a torch DataLoader over an IterableDataset without __len__
        return
    if batches == 0:
        raise no_batch_error(loader, split, "len(loader) is 0", name)
