"""The loader's item order: a pure function of (seed, epoch, indices).

Exact resume and sharding rest on this: the order of epoch `n` never depends on how many
epochs were run before in this process, so a restarted run rebuilds it from the record alone,
and rank `r` of a sharded loader takes `order(epoch)[r::world_size]` of the same order.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["BatchSampler", "epoch_order", "worker_seed"]


def epoch_order(indices: np.ndarray, seed: int | None, epoch: int) -> np.ndarray:
    """`indices` in the order of `epoch`: unchanged without a seed, else a permutation drawn from
    `numpy.random.default_rng([seed, epoch])`."""
    if seed is None:
        return indices
    return np.random.default_rng([seed, epoch]).permutation(indices)


def worker_seed(seed: int, epoch: int) -> int:
    """A 63-bit seed for the loader workers' RNGs of `epoch`, independent of the order's RNG."""
    state = np.random.SeedSequence([seed, epoch, 1]).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


class BatchSampler:
    """Splits an epoch's order into batches of `batch_size` indices; the last may be shorter.

    Sharded for `torch.distributed` (`world_size > 1`), rank `r` takes `order[r::world_size]` of
    the epoch's order. With `pad` (training) the order is first padded by repeating its first
    items to a multiple of `world_size` (as torch's `DistributedSampler`), so every rank has as
    many items, and batch `i` of all ranks together is batch `i` of one process with
    `batch_size * world_size` — except the last one, which holds the padding: a few items
    twice. Without `pad` (validation, evaluation) every item is visited once: the first
    `num_items % world_size` ranks have one item more, so the last global batch is exactly one
    process's and a rank may have one batch fewer than rank 0.

    Args:
        num_items: the number of items in the dataset.
        batch_size: items per batch (>= 1), per rank.
        seed: shuffle seed, or `None` to keep the dataset order.
        rank: this process's rank in `[0, world_size)`.
        world_size: the number of processes sharing the epoch.
        pad: repeat items so every rank has as many (see above).
    """

    def __init__(
        self,
        num_items: int,
        batch_size: int,
        seed: int | None,
        rank: int = 0,
        world_size: int = 1,
        pad: bool = True,
    ) -> None:
        self.num_items = num_items
        self.batch_size = batch_size
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.pad = pad

    @property
    def items_per_epoch(self) -> int:
        """Items this rank visits per epoch (padding included)."""
        if self.pad:
            return -(-self.num_items // self.world_size)
        return max(0, -(-(self.num_items - self.rank) // self.world_size))

    @property
    def max_batches(self) -> int:
        """The batches per epoch of the rank with the most (rank 0): every rank's count of
        iterations when ranks must stay in step."""
        most = -(-self.num_items // self.world_size)
        return -(-most // self.batch_size)

    def __len__(self) -> int:
        """The number of batches per epoch."""
        return -(-self.items_per_epoch // self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """Every index of this rank, int64, in the order of `epoch`."""
        order = epoch_order(np.arange(self.num_items, dtype=np.int64), self.seed, epoch)
        if self.world_size == 1:
            return order
        padding = self.items_per_epoch * self.world_size - len(order) if self.pad else 0
        if padding:
            order = np.concatenate([order, np.resize(order, padding)])
        return order[self.rank :: self.world_size]

    def batches(self, epoch: int, skip: int = 0) -> EpochBatches:
        """The batches of `epoch` from batch `skip` on (the skipped ones are never built)."""
        return EpochBatches(self, epoch, skip)


class EpochBatches:
    """The index batches of one epoch, from batch `skip` on: what torch's `batch_sampler` takes."""

    def __init__(self, sampler: BatchSampler, epoch: int, skip: int) -> None:
        self.sampler = sampler
        self.epoch = epoch
        self.skip = skip

    def __len__(self) -> int:
        return max(len(self.sampler) - self.skip, 0)

    def __iter__(self) -> Iterator[np.ndarray]:
        order = self.sampler.order(self.epoch)
        size = self.sampler.batch_size
        for start in range(self.skip * size, len(order), size):
            yield order[start : start + size]
