"""Burn's `Checkpointer` trait: what a checkpointer of your own implements.

Burn main (`crates/burn-train/src/checkpoint/base.rs`) gives the learner three checkpointers,
one per record (model, optimizer, scheduler), each with `save(epoch, record)`,
`delete(epoch)` and `restore(epoch)`. Write a class with these methods and hand three of them
to `with_custom_checkpointers(model, optim, scheduler)`; see `CustomCheckpointers` for how
burnish calls them beside its own training-state files.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

from burnish.errors import CheckpointError

__all__ = ["Checkpointer", "CheckpointerError", "is_checkpointer", "restore_record"]

CheckpointerError = CheckpointError
"""Burn's `CheckpointerError`: burnish raises `CheckpointError` for every checkpoint failure."""

_METHODS = ("save", "delete", "restore")


@runtime_checkable
class Checkpointer(Protocol):
    """Saves, deletes and restores one record per epoch (Burn's `Checkpointer<R>` trait).

    `restore` may also take the device to load on (Burn 0.21's `restore(epoch, device)`);
    Burn main's records are device-free, so `restore(epoch)` is enough.

    Example:
        >>> class InMemoryCheckpointer:
        ...     def __init__(self):
        ...         self.records = {}
        ...     def save(self, epoch, record):
        ...         self.records[epoch] = record
        ...     def delete(self, epoch):
        ...         self.records.pop(epoch, None)
        ...     def restore(self, epoch):
        ...         return self.records[epoch]
        >>> isinstance(InMemoryCheckpointer(), Checkpointer)
        True
    """

    def save(self, epoch: int, record: Any) -> Any:
        """Save `record` as the checkpoint of `epoch`."""
        ...

    def delete(self, epoch: int) -> Any:
        """Delete the checkpoint of `epoch`, if there is one."""
        ...

    def restore(self, epoch: int, *args: Any) -> Any:
        """The record saved for `epoch`."""
        ...


def is_checkpointer(value: Any) -> bool:
    """Whether `value` has Burn's `Checkpointer` methods (`save`, `delete`, `restore`)."""
    return all(callable(getattr(value, name, None)) for name in _METHODS)


def restore_record(checkpointer: Any, epoch: int, device: Any = None) -> Any:
    """`checkpointer.restore(epoch)`, or `restore(epoch, device)` where it takes a device."""
    try:
        parameters = inspect.signature(checkpointer.restore).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: Burn main's form
        return checkpointer.restore(epoch)
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if len(positional) >= 2:
        return checkpointer.restore(epoch, device)
    return checkpointer.restore(epoch)
