"""Training on several processes with `torch.distributed` (Burn's multi-device learner).

The same script runs alone or under `torchrun --nproc_per_node=N`: `DistributedContext.detect()`
reads torchrun's environment, joins the process group (NCCL for CUDA, Gloo for CPU) with a
timeout, and gives each rank its device. The learner then:

- shards every epoch of burnish data loaders across ranks (`DataLoader.shard`, seeded);
- averages the gradients a `train_step` returns over the ranks, in flat buckets all-reduced
  while the backward pass runs (`grad_sync.py`; Burn's DDP all-reduces the gradients the
  backward pass returns), or shards the model with FSDP2 (`fsdp.py`); accumulated iterations
  do not communicate, only the optimizer step does;
- sums every metric entry over the ranks, so logged values equal one process over the same items;
- writes logs and checkpoints and draws the dashboard on rank 0 only.

See docs/distributed.md.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import datetime
import gc
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from burnish.run_lock import RunLock, RunLockedError

if TYPE_CHECKING:
    from burnish.train.loop.data_adapter import DataAdapter

__all__ = ["DistributedContext"]

log = logging.getLogger("burnish.train")


@dataclasses.dataclass(frozen=True)
class DistributedContext:
    """Where this process stands in a run: rank, world size and its device."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device | None = None

    @property
    def enabled(self) -> bool:
        """True when the run has several processes."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on the process that writes logs and checkpoints (rank 0)."""
        return self.rank == 0

    @classmethod
    def detect(cls, device: torch.device | None = None) -> DistributedContext:
        """The context of this process; joins torchrun's process group when there is one.

        Args:
            device: the device asked for with `LearnerBuilder.devices`; under torchrun a CUDA
                device becomes `cuda:<LOCAL_RANK>`.

        Raises:
            RuntimeError: if torchrun's environment is incomplete.
        """
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if dist.is_available() and dist.is_initialized():
            world_size = dist.get_world_size()
        if world_size <= 1:
            return cls(device=device)
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        device = _rank_device(device, local_rank)
        if not dist.is_initialized():
            _init_process_group(device)
        return cls(dist.get_rank(), dist.get_world_size(), local_rank, device)

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Give every rank rank 0's parameters and buffers."""
        if not self.enabled:
            return
        with torch.no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                dist.broadcast(tensor.data, src=0)

    def place_loader(self, loader: Any, pad: bool) -> DataAdapter:
        """`loader` (any loader `data_adapter` takes) on this process's device and, under
        ranks, its shard: padded to equal lengths (`pad`, training) or each item once."""
        from burnish.train.loop.data_adapter import data_adapter

        adapter = data_adapter(loader)
        if self.device is not None:
            adapter = adapter.to_device(self.device)
        if self.enabled:
            adapter = adapter.shard(self.rank, self.world_size, pad=pad)
        return adapter

    @contextlib.contextmanager
    def run_lock(self, directory: Path) -> Iterator[None]:
        """Rank 0 holds `directory`'s run lock for the block; every rank fails if it can't.

        Raises:
            RunLockedError: on every rank, if another run is writing in `directory`.
        """
        lock = RunLock(directory)
        error: RunLockedError | None = None
        if self.is_main:
            try:
                lock.acquire()
            except RunLockedError as raised:
                error = raised
        if self.agree(error is not None):
            raise error or RunLockedError(
                f"Rank 0 could not lock the artifact directory {str(directory)!r}: another run "
                "is writing there (rank 0's error says which). Use another artifact directory."
            )
        try:
            yield
        finally:
            lock.release()

    def agree(self, flag: bool) -> bool:
        """Rank 0's value of `flag`, on every rank (for decisions all ranks must share)."""
        if not self.enabled:
            return flag
        value = torch.tensor([int(flag)], device=_collective_device(self.device))
        dist.broadcast(value, src=0)
        return bool(value.item())

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when `flag` is True on any rank (e.g. a signal one rank got)."""
        return self.largest(int(flag)) > 0

    def largest(self, value: int) -> int:
        """The largest of the ranks' `value`, on every rank."""
        if not self.enabled:
            return value
        tensor = torch.tensor([value], device=_collective_device(self.device))
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return int(tensor.item())

    def barrier(self) -> None:
        """Wait for every rank (nothing when alone)."""
        if self.enabled:
            dist.barrier()

    def reducer(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """A function summing a CPU tensor over the ranks (None when alone)."""
        if not self.enabled:
            return None
        device = _collective_device(self.device)

        def reduce(tensor: torch.Tensor) -> torch.Tensor:
            on_device = tensor.to(device)
            dist.all_reduce(on_device)
            return on_device.cpu()

        return reduce


def _rank_device(device: torch.device | None, local_rank: int) -> torch.device:
    if device is not None and device.type == "cuda":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return device or torch.device("cpu")


def _init_process_group(device: torch.device) -> None:
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            raise RuntimeError(
                f"WORLD_SIZE is {os.environ['WORLD_SIZE']} but {name} is not set. Launch the "
                "script with `torchrun --nproc_per_node=N script.py` (it sets them all)."
            )
    timeout = datetime.timedelta(seconds=float(os.environ.get("BURNISH_DIST_TIMEOUT", "300")))
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(
        backend, store=_attempt_store(timeout), rank=int(os.environ["RANK"]),
        world_size=int(os.environ["WORLD_SIZE"]), timeout=timeout,
    )  # fmt: skip
    # burnish joined the group, so burnish leaves it: the user may still use it after `fit`,
    # and left to interpreter teardown, Gloo's threads can abort the process at exit.
    atexit.register(_leave_process_group)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    log.info("Joined the process group: rank %d of %d (%s).", rank, world_size, backend)


def _attempt_store(timeout: datetime.timedelta) -> dist.Store:
    """torchrun's store, its keys prefixed by the restart attempt.

    After `torchrun --max-restarts=N` restarts a group, its agent's store still holds the
    addresses the previous attempt's ranks published; a new rank could read a dead peer's
    address and fail to connect ("Gloo connectFullMesh failed ... Connection refused"). A
    prefix per attempt keeps the attempts apart.
    """
    from torch.distributed.rendezvous import rendezvous

    store, _, _ = next(rendezvous("env://", timeout=timeout))
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"burnish/attempt-{attempt}", store)


def _leave_process_group() -> None:
    if dist.is_initialized():
        # FSDP's modules hold their device mesh, and it the process group, in reference
        # cycles: freed now, the group's threads stop while the interpreter is still whole.
        gc.collect()
        dist.destroy_process_group()


def _collective_device(device: torch.device | None) -> torch.device:
    """The device collectives run on: the rank's CUDA device with NCCL, else the CPU."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return device if device is not None and device.type == "cuda" else torch.device("cuda")
    return torch.device("cpu")
