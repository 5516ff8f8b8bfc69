"""`save_into` / `load_from` (Burn's `ModuleSnapshot` methods) for any `nn.Module`."""

from __future__ import annotations

from torch import nn

from burnish.record.store.apply_result import ApplyResult
from burnish.record.store.base import ModuleStore

__all__ = ["load_from", "save_into"]


def save_into(module: nn.Module, store: ModuleStore) -> None:
    """Save `module`'s tensors into `store` (Burn's `model.save_into(&mut store)`).

    Raises:
        RecordError: if the file exists (without `.overwrite(True)`), or a tensor cannot
            be stored.
    """
    _check(module, store, "save_into")
    store.collect_from(module)


def load_from(module: nn.Module, store: ModuleStore) -> ApplyResult:
    """Load `store` into `module` in place (Burn's `model.load_from(&mut store)`).

    Each tensor is copied into the module's own tensor (keeping its dtype and device) and
    then released from memory, so a memory-mapped file is never held whole.

    Returns:
        What was applied, skipped, missing and unused, and the errors.

    Raises:
        RecordError: for an unreadable or hostile file; tensors that do not fit (unless
            `.validate(False)`); missing tensors (unless `.allow_partial(True)`).
    """
    _check(module, store, "load_from")
    return store.apply_to(module)


def _check(module: object, store: object, function: str) -> None:
    if not isinstance(module, nn.Module):
        raise TypeError(f"`{function}` takes an nn.Module first; received {type(module).__name__}.")
    if not isinstance(store, ModuleStore):
        raise TypeError(
            f"`{function}` takes a store (BurnpackStore, SafetensorsStore, PytorchStore); "
            f"received {type(store).__name__}."
        )
