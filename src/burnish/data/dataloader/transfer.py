"""Moving batches between devices: every tensor inside dataclasses, tuples, lists and dicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["PinnableBatch", "map_tensors", "move_to_device"]


def map_tensors(value: Any, function: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`value` with `function` applied to every tensor in it; other leaves are kept as they are."""
    if isinstance(value, torch.Tensor):
        return function(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            field.name: map_tensors(getattr(value, field.name), function)
            for field in dataclasses.fields(value)
            if field.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        return type(value)(*(map_tensors(item, function) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(item, function) for item in value)
    if isinstance(value, dict):
        return type(value)((key, map_tensors(item, function)) for key, item in value.items())
    return value


def move_to_device(value: Any, device: torch.device) -> Any:
    """`value` with every tensor on `device` (asynchronous copies from pinned memory)."""
    return map_tensors(value, lambda tensor: tensor.to(device, non_blocking=True))


class PinnableBatch:
    """Carries a batch from a worker through torch's pin-memory thread, which calls `pin_memory`
    on it; torch's own pinning does not look inside dataclasses."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def pin_memory(self) -> PinnableBatch:
        """Pin every tensor of the batch in page-locked memory; returns `self`."""
        self.value = map_tensors(self.value, lambda tensor: tensor.pin_memory())
        return self
