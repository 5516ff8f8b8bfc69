"""A checkpoint's records copied to the host, out of reach of the training loop.

The training loop goes on updating parameters, optimizer moments and metric states in place
while a checkpoint is written in the background (`AsyncCheckpointer`), so what the writer
serializes must be a copy taken when the checkpoint was asked for. `host_snapshot` makes it
with one copy per tensor: a `clone` on the CPU; from a CUDA device, a `non_blocking` copy into
pinned memory, with one synchronization per device at the end (pinned blocks come from torch's
caching host allocator, so later checkpoints reuse them).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

__all__ = ["host_snapshot"]

_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, np.generic, torch.dtype)


def host_snapshot(record: Any, owned: bool = False) -> Any:
    """A copy of `record` whose tensors are on the host and share no memory with the run.

    Containers (dicts, lists, tuples) are copied too, so later changes to the run's own
    structures do not reach the snapshot either.

    Args:
        record: a record (nested dicts, lists and tuples of tensors and Python values).
        owned: whether the record's tensors are already the caller's private copies (as an
            optimizer's `to_record()` makes them): host tensors are then kept as they are,
            device tensors still come to the host.

    Returns:
        The copy, with every tensor on the CPU.
    """
    copier = _HostCopier(owned)
    snapshot = copier.copy(record)
    copier.synchronize()
    return snapshot


class _HostCopier:
    """Copies one record; a tensor met twice (the same object) is copied once."""

    def __init__(self, owned: bool) -> None:
        self.owned = owned
        self.copies: dict[int, torch.Tensor] = {}
        self.devices: set[torch.device] = set()

    def copy(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, dict):
            return {key: self.copy(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.copy(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.copy(item) for item in value)
        if isinstance(value, _IMMUTABLE):
            return value
        return copy.deepcopy(value)  # arrays and anything else a record may hold

    def tensor(self, tensor: torch.Tensor) -> torch.Tensor:
        done = self.copies.get(id(tensor))
        if done is not None:
            return done
        source = tensor.detach()
        if source.device.type == "cpu":
            copied = source if self.owned else source.clone()
        elif source.device.type == "cuda" and source.layout == torch.strided:
            copied = torch.empty(source.shape, dtype=source.dtype, pin_memory=True)
            copied.copy_(source, non_blocking=True)
            self.devices.add(source.device)
        else:  # other devices and layouts: a plain (waiting) copy
            copied = source.to("cpu", copy=True)
        self.copies[id(tensor)] = copied
        return copied

    def synchronize(self) -> None:
        """Wait for the non-blocking copies: one synchronization per device, per snapshot."""
        for device in self.devices:
            torch.cuda.synchronize(device)
