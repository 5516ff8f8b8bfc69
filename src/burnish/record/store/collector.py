"""Snapshots of a module's tensors for saving (Burn's `Collector`)."""

from __future__ import annotations

from torch import nn

from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.filter import PathFilter
from burnish.record.store.layout import BURN, burn_lacks, written_layout
from burnish.record.store.param_id import param_id
from burnish.record.store.snapshot import TensorSnapshot
from burnish.record.store.traversal import module_tensors

__all__ = ["collect"]


def collect(
    module: nn.Module, filter: PathFilter | None = None, adapter: ModuleAdapter | None = None
) -> list[TensorSnapshot]:
    """The module's tensors selected by `filter` (None: all), each through `adapter`.

    Nothing is copied: each snapshot produces its (detached) tensor when asked. Through an
    adapter that writes Burn's layout, tensors Burn's modules lack (`BatchNorm`'s
    `num_batches_tracked`) are left out, so the file holds exactly what Burn loads.
    """
    for_burn = adapter is not None and written_layout(adapter) == BURN
    snapshots = []
    for entry in module_tensors(module):
        if for_burn and burn_lacks(entry.path_stack, entry.container_stack):
            continue
        snapshot = TensorSnapshot(
            entry.path_stack,
            entry.container_stack,
            tuple(entry.tensor.shape),
            entry.tensor.dtype,
            param_id(entry.tensor),
            entry.tensor.detach,
        )
        if filter is not None and not filter.matches(snapshot.full_path, snapshot.container_path):
            continue
        snapshots.append(adapter.adapt(snapshot) if adapter is not None else snapshot)
    return snapshots
